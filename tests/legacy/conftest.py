from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command

from tests.legacy.builders import T1, T2, LegacyHome, row
from timeline.models import TimelineRow


def dump_database() -> dict[str, list[dict]]:
    """Every row of every table, in primary-key order: a dry run or a failed
    import must leave this exactly as it was."""
    return {
        model._meta.label: list(model.objects.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.managed
    }


def backups() -> list[Path]:
    root = Path(settings.DATA_DIR) / "backup" / "pre-migration"
    return sorted(root.iterdir()) if root.is_dir() else []


def run(path, *args) -> str:
    """``manage.py import_legacy_json PATH ARGS…``; what it printed."""
    out = StringIO()
    call_command("import_legacy_json", str(path), *args, stdout=out)
    return out.getvalue()


def timeline(agent_id: str) -> list[tuple]:
    return list(
        TimelineRow.objects.filter(agent_id=agent_id)
        .order_by("seq")
        .values_list("seq", "committed_at", "item_id", "item_type", "item")
    )


def without_import_runs(dump: dict) -> dict:
    return {label: rows for label, rows in dump.items() if label != "legacy.ImportRun"}


@pytest.fixture(autouse=True)
def own_data_dir(settings, tmp_path):
    """Each test gets its own data dir, so its backups are its own."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()


@pytest.fixture
def legacy_home(tmp_path) -> LegacyHome:
    # A space and non-ASCII characters in the source path itself.
    return LegacyHome(tmp_path / "legacy home ü")


@pytest.fixture
def quirks_home(legacy_home: LegacyHome) -> LegacyHome:
    """Every quirk of the legacy data that is still valid input."""
    home = legacy_home
    app = "/home/me/code/my app ü"
    home.project("p-app", app, projectKey="k1", customName="App!")  # unknown keys
    # The same directory again (trailing slash), older: merged into p-app.
    home.project("p-app-old", app + "/", displayName="stale name", updatedAt="2024-01-01T00:00:00Z")
    home.project("p-notes", "/home/me/notes", kind="non_git", displayName="Notes")
    home.project("p-old", "/home/me/old", archivedAt=T1)
    home.workspace("w-app", "p-app", app, branch="main", extraKey={"x": 1})
    home.workspace("w-feature", "p-app", app + "/.worktrees/feature x", kind="worktree", branch="feature x")
    home.workspace("w-notes", "p-notes", "/home/me/notes", kind="directory", branch=None)
    home.workspace("w-old", "p-old", "/home/me/old", archivedAt=T1)
    home.workspace("w-old-2", "p-old", "/home/me/old/sub", archivedAt=T1)

    home.agent("a-nested", app, lastStatus="running", labels={"team": "core"}, someFutureKey=[1, 2])
    home.agent("a-flat", app + "/.worktrees/feature x", layout="flat", lastActivityAt=T1)
    # The same id in both layouts: the newest updatedAt wins, wherever it is.
    home.agent("a-dup", "/home/me/notes", title="older copy", updatedAt=T1)
    home.agent("a-dup", "/home/me/notes", layout="flat", title="newest copy", updatedAt=T2)
    home.agent("a-dup", "/home/me/notes", layout="flat", filename="a-dup-backup.json", title="oldest", updatedAt=T0_OLD)
    # Leftovers of interrupted atomic writes, in both layouts; not even valid JSON.
    home.write_file(home.root / "agents" / legacy_dir(app) / ".agent.tmp-123", '{"id": "a-nest')
    home.write_file(home.root / "agents" / ".agent.tmp-456.json", "{")
    home.agent("a-archived", "/home/me/old", lastStatus="running", archivedAt=T2)
    home.agent(
        "a-attention",
        "/home/me/old/sub",
        requiresAttention=True,
        attentionReason="permission",
        attentionTimestamp=T1,
        persistence={"provider": "claude", "sessionId": "s-1", "nativeHandle": "h"},
    )
    # A stale reason on an agent that no longer needs attention.
    home.agent("a-stale", "/home/me/notes", attentionReason="finished", lastStatus=None)
    # A cwd no workspace has: gets its own project and checkout workspace.
    home.agent("a-orphan", "/tmp/scratch pad/ünï", createdAt="2024-02-01T08:00:00Z")

    home.timeline("a-nested", 5, epoch="epoch-nested")
    home.timeline(
        "a-flat",
        [row(1), row(2, item_id=None), row(3, text="ünïcödé \u2028 line sep")],
        epoch="epoch-flat",
        tail='{"seq": 4, "committed_at": "2024-03-01T1',  # a crash mid-write
    )
    home.timeline("a-archived", 0, epoch="epoch-empty")
    home.save()
    return home


T0_OLD = "2023-12-31T23:59:59Z"


def legacy_dir(cwd: str) -> str:
    return cwd.strip("/").replace("/", "-")
