from __future__ import annotations

import os
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone

from datadir import store
from registry.services import archive_project
from snapshots.models import AgentSnapshot
from snapshots.services import delete_agent, update_agent
from tests.factories import AgentFactory, WorkspaceFactory
from timeline.models import TimelineHead, TimelineRow

EXCLUDED = ("snapshots", "backup", ".locks")


def append_rows(agent_id: str, count: int, *, filler: int = 0) -> None:
    """The append path from the design notes: lock, head+1.., bulk insert, move head."""
    with transaction.atomic():
        head = TimelineHead.objects.select_for_update().get(pk=agent_id).head_seq
        TimelineRow.objects.bulk_create(
            TimelineRow(
                agent_id=agent_id,
                seq=head + k,
                committed_at=timezone.now(),
                item_type="message",
                item={"text": f"{agent_id} #{head + k}", "filler": os.urandom(filler).hex()},
                item_id=f"{agent_id}-{head + k}",
            )
            for k in range(1, count + 1)
        )
        TimelineHead.objects.filter(pk=agent_id).update(head_seq=head + count)


def database_state() -> dict[str, list]:
    """Every row of every table, with the timelines' epochs left out (a restore always rotates them)."""
    state = {}
    heads_table = TimelineHead._meta.db_table
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names()):
            cursor.execute(f'SELECT * FROM "{table}"')
            columns = [col[0] for col in cursor.description]
            rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
            if table == heads_table:
                for row in rows:
                    row.pop("epoch")
            state[table] = sorted(rows, key=repr)
    return state


def file_state(data_dir: Path) -> dict[str, bytes]:
    files = {}
    for root, dirs, names in os.walk(data_dir):
        if Path(root) == data_dir:
            dirs[:] = [d for d in dirs if d not in EXCLUDED]
        for name in names:
            path = Path(root) / name
            files[path.relative_to(data_dir).as_posix()] = path.read_bytes()
    return files


def epochs() -> dict[str, str]:
    return dict(TimelineHead.objects.values_list("agent_id", "epoch"))


def snapshot_dirs(data_dir: Path) -> list[str]:
    root = data_dir / "snapshots"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def build_state(data_dir):
    workspace = WorkspaceFactory()
    agents = [AgentFactory(workspace=workspace, agent_id=f"a{n}") for n in range(3)]
    for agent in agents:
        append_rows(agent.agent_id, 4)
    (data_dir / "state.json").write_text('{"v": 1}')
    (data_dir / "uploads").mkdir()
    (data_dir / "uploads" / "blob.bin").write_bytes(os.urandom(4096))
    (data_dir / "gone-later.txt").write_text("bye")
    return workspace, agents


def mutate_state(data_dir, workspace):
    """What a bad run might do: archive a project, write rows, delete, rewrite files."""
    append_rows("a0", 7)
    update_agent(agent=AgentSnapshot.objects.get(pk="a1"), title="renamed by a buggy client")
    delete_agent(agent=AgentSnapshot.objects.get(pk="a2"))
    AgentFactory(workspace=workspace, agent_id="newcomer")
    archive_project(project=workspace.project)
    (data_dir / "state.json").write_text('{"v": 2, "broken": true}')
    (data_dir / "gone-later.txt").unlink()
    (data_dir / "new.txt").write_text("appeared")


def rehash_db(path, manifest):
    """Make the manifest match a dump that was changed on purpose."""
    db = path / manifest["database"]["file"]
    manifest["database"]["size"] = db.stat().st_size
    manifest["database"]["sha256"] = store.hash_file(db)
