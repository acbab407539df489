from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.utils import timezone

from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow

EXCLUDED = ("snapshots", "backup", ".locks")


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    """A private data dir for the test; the database stays pytest-django's test DB."""
    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    settings.CHARTR_SNAPSHOTS_KEEP = 14
    return path


def append_rows(agent_id: str, count: int, *, filler: int = 0) -> None:
    """The append path from the design notes: lock, head+1.., bulk insert, move head."""
    with transaction.atomic():
        head = AgentSnapshot.objects.select_for_update().get(pk=agent_id).head_seq
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
        AgentSnapshot.objects.filter(pk=agent_id).update(head_seq=head + count)


def database_state() -> dict[str, list]:
    """Every row of every table, with timeline_epoch left out (a restore always rotates it)."""
    state = {}
    agents_table = AgentSnapshot._meta.db_table
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names()):
            cursor.execute(f'SELECT * FROM "{table}"')
            columns = [col[0] for col in cursor.description]
            rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
            if table == agents_table:
                for row in rows:
                    row.pop("timeline_epoch")
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
    return dict(AgentSnapshot.objects.values_list("agent_id", "timeline_epoch"))


def snapshot_dirs(data_dir: Path) -> list[str]:
    root = data_dir / "snapshots"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []
