"""manage.py snapshot and manage.py restore, in-process (their cross-process behaviour is in test_processes.py)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from datadir.lock import store_lock
from snapshots.models import AgentSnapshot
from snapshots.services import delete_agent, record_heartbeat, update_agent
from tests.datadir.conftest import append_rows, snapshot_dirs
from tests.factories import AgentFactory
from timeline.models import TimelineHead
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db(transaction=True)


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_snapshot_command_reports_what_it_took(data_dir):
    AgentFactory(agent_id="a0")
    (data_dir / "notes.txt").write_text("hi")
    first = run("snapshot")
    [name] = snapshot_dirs(data_dir)
    assert f"Data snapshot {name} taken in {data_dir / 'snapshots' / name}" in first
    assert "files: 1 (0 hard-linked to the previous snapshot, 1 copied" in first
    assert "first snapshot" in first
    second = run("snapshot")
    assert "files: 1 (1 hard-linked to the previous snapshot, 0 copied" in second
    assert "no project, workspace, agent or timeline changed" in second and "kept the newest 14" in second


def test_snapshot_command_with_keep_zero_says_so_and_does_nothing(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    assert "Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0); nothing was done." in run("snapshot")
    assert snapshot_dirs(data_dir) == []


def test_snapshot_no_wait_fails_clearly_while_the_lock_is_held(data_dir):
    with store_lock():
        with pytest.raises(CommandError, match="Another data snapshot or restore is running"):
            run("snapshot", "--no-wait")
        with pytest.raises(CommandError, match="Another data snapshot or restore is running"):
            run("restore", "--no-wait")
    assert snapshot_dirs(data_dir) == []


def test_restore_list_newest_and_from(data_dir):
    assert "No data snapshots yet" in run("restore", "--list")
    AgentFactory(agent_id="a0")
    run("snapshot")
    append_timeline_items(
        agent_id="a0", items=[NewTimelineItem(item={"type": "user_message", "text": t}) for t in "abc"]
    )
    run("snapshot")
    older, newer = snapshot_dirs(data_dir)
    listing = run("restore", "--list").splitlines()
    assert [line.split()[0] for line in listing if not line.startswith(" ")] == [newer, older]
    assert "manual" in listing[0]
    assert listing[1:3] == [
        "    holds 1 project, 1 workspace, 1 agent, 3 timeline rows",
        "    changes: timeline rows +3 (1 agent)",
    ]

    append_rows("a0", 2)
    out = run("restore", "--from", older)
    undo = out.splitlines()[0].removeprefix("Pre-restore snapshot: ")
    assert undo in snapshot_dirs(data_dir) and undo > newer
    assert f"Restored data snapshot {older}." in out and f"restore --from {undo}" in out
    assert TimelineHead.objects.get(pk="a0").head_seq == 0

    out = run("restore")  # the newest is the pre-restore snapshot: this undoes the restore
    assert f"Restored data snapshot {undo}." in out
    assert TimelineHead.objects.get(pk="a0").head_seq == 5
    assert "pre-restore (state before restoring" in run("restore", "--list")


def test_restore_errors_are_command_errors(data_dir):
    with pytest.raises(CommandError, match="There are no data snapshots"):
        run("restore")
    run("snapshot")
    with pytest.raises(CommandError, match="There is no data snapshot named 'nope'"):
        run("restore", "--from", "nope")
    with pytest.raises(CommandError, match="--list cannot be combined"):
        run("restore", "--list", "--from", "x")


def test_restore_dry_run_changes_nothing(data_dir):
    AgentFactory(agent_id="a0")
    run("snapshot")
    append_rows("a0", 1)
    out = run("restore", "--dry-run")
    assert "is complete and intact" in out and "nothing was changed" in out
    assert TimelineHead.objects.get(pk="a0").head_seq == 1
    assert len(snapshot_dirs(data_dir)) == 1


def test_a_file_system_error_is_a_command_error_naming_the_path(data_dir, monkeypatch):
    import shutil

    AgentFactory(agent_id="a0")
    (data_dir / "notes.txt").write_text("hi")  # restore copies data files back on both engines
    run("snapshot")

    def disk_full(src, dst, *args, **kwargs):
        raise OSError(28, "No space left on device", str(dst))

    append_rows("a0", 2)
    (data_dir / "notes.txt").write_text("changed since")
    before = TimelineHead.objects.get(pk="a0").head_seq
    monkeypatch.setattr(shutil, "copyfile", disk_full)
    with pytest.raises(CommandError, match="No space left on device") as exc:
        run("restore")
    assert str(data_dir) in str(exc.value)
    # The copies are staged before the database is touched, so a full disk changes nothing.
    assert TimelineHead.objects.get(pk="a0").head_seq == before
    assert (data_dir / "notes.txt").read_text() == "changed since"
    assert not list(data_dir.glob(".*.restore-*"))


class TestSnapshotIfChanged:
    def test_first_one_is_taken_then_unchanged_until_something_changes(self, data_dir):
        agent = AgentFactory(agent_id="a0")
        assert "taken in" in run("snapshot", "--if-changed")
        assert run("snapshot", "--if-changed").startswith("unchanged")
        assert len(snapshot_dirs(data_dir)) == 1

        append_rows("a0", 1)  # an insert
        assert "taken in" in run("snapshot", "--if-changed")
        update_agent(agent=agent, title="renamed")  # an update: no count moves
        assert "taken in" in run("snapshot", "--if-changed")
        (data_dir / "notes.txt").write_text("a data file")  # a file of the data dir
        assert "taken in" in run("snapshot", "--if-changed")
        assert run("snapshot", "--if-changed").startswith("unchanged")
        assert len(snapshot_dirs(data_dir)) == 4

    def test_a_delete_is_a_change(self, data_dir):
        AgentFactory(agent_id="a0")
        AgentFactory(agent_id="a1")
        run("snapshot")
        delete_agent(agent=AgentSnapshot.objects.get(pk="a1"))
        assert "taken in" in run("snapshot", "--if-changed")

    def test_a_heartbeat_is_not_a_change(self, data_dir):
        AgentFactory(agent_id="a0", lifecycle="running")
        run("snapshot")
        record_heartbeat(agent_id="a0")
        assert run("snapshot", "--if-changed").startswith("unchanged")

    def test_a_snapshot_without_a_marker_never_counts_as_unchanged(self, data_dir):
        AgentFactory(agent_id="a0")
        run("snapshot")
        [name] = snapshot_dirs(data_dir)
        manifest_path = data_dir / "snapshots" / name / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        del manifest["change_marker"]
        manifest_path.write_text(json.dumps(manifest))
        assert "taken in" in run("snapshot", "--if-changed")

    def test_rotation_still_applies(self, data_dir, settings):
        settings.CHARTR_SNAPSHOTS_KEEP = 2
        agent = AgentFactory(agent_id="a0")
        for title in ("one", "two", "three"):
            update_agent(agent=agent, title=title)
            run("snapshot", "--if-changed")
        assert len(snapshot_dirs(data_dir)) == 2
