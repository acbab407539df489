"""take_snapshot / restore_snapshot in-process, against the test database (SQLite or PostgreSQL)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest
from django.db import connection

from datadir import store
from datadir.errors import (
    EngineMismatch,
    SnapshotCorrupt,
    SnapshotNotFound,
    SnapshotsDisabled,
    SnapshotToolMissing,
    StoreBusy,
)
from datadir.lock import store_lock
from datadir.selectors import list_data_snapshots
from datadir.services import restore_snapshot, take_snapshot
from registry.services import archive_project
from snapshots.models import AgentSnapshot
from snapshots.services import delete_agent, update_agent
from snapshots.signals import agents_changed
from tests.datadir.conftest import append_rows, database_state, epochs, file_state, snapshot_dirs
from tests.factories import AgentFactory, WorkspaceFactory
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db(transaction=True)


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


def test_snapshot_layout_manifest_and_change_list(data_dir):
    build_state(data_dir)
    (data_dir / "backup").mkdir()
    (data_dir / "backup" / "legacy.json").write_text("{}")
    first = take_snapshot()
    path = data_dir / "snapshots" / first.name
    assert store.is_snapshot_name(first.name) and path.is_dir()
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["engine"] == connection.vendor
    assert manifest["database"]["tables"]["timeline_timelinerow"] == 12
    assert manifest["database"]["tables"]["snapshots_agentsnapshot"] == 3
    assert set(manifest["files"]) == {"state.json", "uploads/blob.bin", "gone-later.txt"}  # not backup/
    assert (path / manifest["database"]["file"]).stat().st_size == manifest["database"]["size"]
    assert (path / "files" / "uploads" / "blob.bin").read_bytes() == (data_dir / "uploads" / "blob.bin").read_bytes()
    assert "first snapshot" in first.summary

    append_rows("a0", 5)
    (data_dir / "state.json").write_text('{"v": 2}')
    (data_dir / "gone-later.txt").unlink()
    (data_dir / "added.txt").write_text("x")
    second = take_snapshot()
    assert second.previous == first.name
    changes = (data_dir / "snapshots" / second.name / "changes.txt").read_text()
    assert f"previous snapshot: {first.name}" in changes
    assert "files: 1 added, 1 changed, 1 removed, 1 unchanged" in changes
    assert "  + added.txt" in changes and "  ~ state.json" in changes and "  - gone-later.txt" in changes
    timeline_line = next(line for line in changes.splitlines() if "timeline_timelinerow" in line)
    assert timeline_line.split()[1:] == ["17", "(+5)"]
    assert "timeline_timelinerow +5" in second.summary
    listed = list_data_snapshots()
    assert [info.name for info in listed] == [second.name, first.name]
    assert listed[0].rows == sum(second.tables.values()) and listed[0].files == 3


def test_unchanged_files_are_hard_linked_across_snapshots(data_dir):
    big = data_dir / "big.bin"
    big.write_bytes(os.urandom(2 * 1024 * 1024))
    names = []
    for n in range(4):
        (data_dir / "counter.txt").write_text(str(n))
        names.append(take_snapshot().name)
    copies = [data_dir / "snapshots" / name / "files" / "big.bin" for name in names]
    # One inode shared by all four snapshots, and never the live file's own inode.
    assert len({p.stat().st_ino for p in copies}) == 1
    assert copies[0].stat().st_ino != big.stat().st_ino
    assert all(p.stat().st_nlink == 4 for p in copies)
    counters = [data_dir / "snapshots" / name / "files" / "counter.txt" for name in names]
    assert [p.read_text() for p in counters] == ["0", "1", "2", "3"]
    assert all(p.stat().st_nlink == 1 for p in counters)
    # du counts each inode once: 4 snapshots cost about one copy of big.bin plus the small parts.
    used_kib = int(
        subprocess.run(
            ["du", "-sk", str(data_dir / "snapshots")], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )
    one_snapshot_kib = int(
        subprocess.run(
            ["du", "-sk", str(data_dir / "snapshots" / names[0])], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )
    assert used_kib < 2 * one_snapshot_kib
    listed = {info.name: info for info in list_data_snapshots()}
    assert listed[names[-1]].own_bytes < listed[names[-1]].size_bytes - 2 * 1024 * 1024 + 1


def test_a_changed_file_is_copied_not_linked(data_dir):
    target = data_dir / "state.json"
    target.write_text("one")
    first = take_snapshot()
    target.write_text("two!")
    second = take_snapshot()
    a = data_dir / "snapshots" / first.name / "files" / "state.json"
    b = data_dir / "snapshots" / second.name / "files" / "state.json"
    assert a.stat().st_ino != b.stat().st_ino
    assert (a.read_text(), b.read_text()) == ("one", "two!")
    assert second.linked_files == 0


def test_rotation_keeps_exactly_n(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 3
    names = [take_snapshot().name for _ in range(5)]
    assert names == sorted(names) and len(set(names)) == 5
    assert snapshot_dirs(data_dir) == names[-3:]
    settings.CHARTR_SNAPSHOTS_KEEP = 1
    last = take_snapshot()
    assert snapshot_dirs(data_dir) == [last.name]
    assert set(last.rotated) == set(names[-3:])


def test_keep_zero_disables_snapshots(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    with pytest.raises(SnapshotsDisabled, match="CHARTR_SNAPSHOTS_KEEP=0"):
        take_snapshot()
    assert not (data_dir / "snapshots").exists()


def test_restore_then_restore_the_pre_restore_snapshot_returns_exactly(data_dir):
    workspace, _ = build_state(data_dir)
    good = take_snapshot()
    state_a, files_a, epochs_a = database_state(), file_state(data_dir), epochs()

    mutate_state(data_dir, workspace)
    state_b, files_b, epochs_b = database_state(), file_state(data_dir), epochs()
    assert state_b != state_a and files_b != files_a

    result = restore_snapshot(name=good.name)
    assert result.restored == good.name and result.undo_snapshot not in (None, good.name)
    assert result.agents_with_new_epoch == 3
    assert database_state() == state_a
    assert file_state(data_dir) == files_a
    epochs_restored = epochs()
    assert set(epochs_restored) == set(epochs_a)
    assert all(epochs_restored[agent] != epochs_a[agent] for agent in epochs_a)
    assert len(set(epochs_restored.values())) == 3  # a fresh value per agent

    undo = restore_snapshot(name=result.undo_snapshot)
    assert database_state() == state_b
    assert file_state(data_dir) == files_b
    epochs_undone = epochs()
    assert set(epochs_undone) == set(epochs_b)
    assert all(epochs_undone[a] != epochs_b[a] and epochs_undone[a] != epochs_restored.get(a) for a in epochs_b)
    # Each restore left its own pre-restore snapshot behind.
    assert undo.undo_snapshot in snapshot_dirs(data_dir)
    assert len(snapshot_dirs(data_dir)) == 3


def test_restore_without_a_name_restores_the_newest(data_dir):
    build_state(data_dir)
    take_snapshot()
    append_rows("a0", 3)
    newest = take_snapshot()
    append_rows("a0", 3)
    result = restore_snapshot()
    assert result.restored == newest.name
    assert AgentSnapshot.objects.get(pk="a0").head_seq == 7
    assert TimelineRow.objects.filter(agent_id="a0").count() == 7


def test_after_a_restore_every_epoch_changes_and_old_cursors_no_longer_match(data_dir):
    build_state(data_dir)
    snap = take_snapshot()
    # A client's cursor: (agent, epoch, seq) as read before the restore.
    cursors = {a.agent_id: (a.timeline_epoch, a.head_seq) for a in AgentSnapshot.objects.all()}
    append_rows("a0", 10)
    received = []
    agents_changed.connect(lambda **kw: received.append(kw), weak=False, dispatch_uid="test-restore-signal")
    try:
        restore_snapshot(name=snap.name)
    finally:
        agents_changed.disconnect(dispatch_uid="test-restore-signal")
    for agent in AgentSnapshot.objects.all():
        held_epoch, _ = cursors[agent.agent_id]
        assert agent.timeline_epoch != held_epoch
        assert AgentSnapshot.objects.filter(pk=agent.agent_id, timeline_epoch=held_epoch).count() == 0
    assert len(received) == 1 and received[0]["reason"] == "restore"
    assert sorted(received[0]["agent_ids"]) == ["a0", "a1", "a2"]


def _rehash_db(path, manifest):
    db = path / manifest["database"]["file"]
    manifest["database"]["size"] = db.stat().st_size
    manifest["database"]["sha256"] = store.hash_file(db)


def _corrupt_missing_manifest(path, manifest):
    (path / "manifest.json").unlink()
    return None


def _corrupt_flipped_db_bytes(path, manifest):
    db = path / manifest["database"]["file"]
    data = bytearray(db.read_bytes())
    data[len(data) // 2] ^= 0xFF
    db.write_bytes(bytes(data))
    return manifest


def _corrupt_truncated_and_rehashed(path, manifest):
    """Damage that happened before hashing: only the content checks can catch it."""
    db = path / manifest["database"]["file"]
    data = db.read_bytes()
    if connection.vendor == "sqlite":
        # Scribble over the pages after the header: integrity_check must fail.
        data = data[:4096] + b"\x13" * (len(data) - 4096)
    else:
        data = data[: len(data) // 2]  # pg_restore --list must fail
    db.write_bytes(data)
    _rehash_db(path, manifest)
    return manifest


def _corrupt_row_counts(path, manifest):
    manifest["database"]["tables"]["timeline_timelinerow"] += 1
    return manifest


def _corrupt_missing_file(path, manifest):
    (path / "files" / "uploads" / "blob.bin").unlink()
    return manifest


def _corrupt_unsafe_path(path, manifest):
    manifest["files"]["../../escape.txt"] = manifest["files"]["state.json"]
    return manifest


def _corrupt_file_entry(path, manifest):
    """A file entry restore would only read after swapping the database in."""
    manifest["files"]["state.json"]["mtime_ns"] = "yesterday"
    return manifest


def _corrupt_bad_json(path, manifest):
    (path / "manifest.json").write_text('{"format": 1,\n "engine": ')
    return None


@pytest.mark.parametrize(
    "damage",
    [
        _corrupt_missing_manifest,
        _corrupt_flipped_db_bytes,
        _corrupt_truncated_and_rehashed,
        _corrupt_row_counts,
        _corrupt_missing_file,
        _corrupt_unsafe_path,
        _corrupt_file_entry,
        _corrupt_bad_json,
    ],
    ids=lambda f: f.__name__.removeprefix("_corrupt_"),
)
def test_a_corrupt_snapshot_is_refused_and_nothing_changes(data_dir, damage):
    build_state(data_dir)
    snap = take_snapshot()
    if damage is _corrupt_row_counts and connection.vendor != "sqlite":
        pytest.skip("row counts are checked against the SQLite copy; a pg dump is checked with pg_restore --list")
    path = data_dir / "snapshots" / snap.name
    manifest = damage(path, json.loads((path / "manifest.json").read_text()))
    if manifest is not None:
        (path / "manifest.json").write_text(json.dumps(manifest))
    append_rows("a0", 2)
    (data_dir / "state.json").write_text("current")
    before_db, before_files, before_epochs = database_state(), file_state(data_dir), epochs()
    before_snapshots = snapshot_dirs(data_dir)

    with pytest.raises(SnapshotCorrupt, match=f"Data snapshot {snap.name} .*nothing was changed"):
        restore_snapshot(name=snap.name)

    assert database_state() == before_db
    assert epochs() == before_epochs
    assert file_state(data_dir) == before_files
    assert snapshot_dirs(data_dir) == before_snapshots  # no pre-restore snapshot, no leftovers
    assert not (data_dir.parent / "escape.txt").exists()


def test_an_incomplete_snapshot_is_listed_as_such(data_dir):
    snap = take_snapshot()
    (data_dir / "snapshots" / snap.name / "manifest.json").unlink()
    [info] = list_data_snapshots()
    assert not info.complete and "manifest.json is missing" in info.problem


def test_the_newest_being_corrupt_is_refused_not_skipped(data_dir):
    take_snapshot()
    newest = take_snapshot()
    (data_dir / "snapshots" / newest.name / "manifest.json").unlink()
    with pytest.raises(SnapshotCorrupt, match=newest.name):
        restore_snapshot()


def test_unknown_snapshot_and_no_snapshots(data_dir):
    with pytest.raises(SnapshotNotFound, match="no data snapshots"):
        restore_snapshot()
    snap = take_snapshot()
    with pytest.raises(SnapshotNotFound, match=f"'20990101-000000.000'.*{snap.name}"):
        restore_snapshot(name="20990101-000000.000")
    with pytest.raises(SnapshotNotFound):
        restore_snapshot(name="../../etc")


def test_a_snapshot_of_another_engine_is_refused(data_dir):
    snap = take_snapshot()
    path = data_dir / "snapshots" / snap.name / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["engine"] = "postgresql" if connection.vendor == "sqlite" else "sqlite"
    path.write_text(json.dumps(manifest))
    with pytest.raises(EngineMismatch, match="nothing was changed"):
        restore_snapshot(name=snap.name)


def test_restore_refuses_when_snapshots_are_disabled(data_dir, settings):
    snap = take_snapshot()
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    with pytest.raises(SnapshotsDisabled, match="could not be undone"):
        restore_snapshot(name=snap.name)
    assert snapshot_dirs(data_dir) == [snap.name]


def test_restoring_with_keep_one_keeps_the_restored_snapshot(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 1
    build_state(data_dir)
    snap = take_snapshot()
    result = restore_snapshot(name=snap.name)
    # The pre-restore snapshot must not rotate away the one being restored.
    assert snapshot_dirs(data_dir) == sorted([snap.name, result.undo_snapshot])


def test_dry_run_checks_and_changes_nothing(data_dir):
    build_state(data_dir)
    snap = take_snapshot()
    append_rows("a0", 2)
    before = database_state(), epochs()
    result = restore_snapshot(name=snap.name, dry_run=True)
    assert result.dry_run and result.undo_snapshot is None
    assert (database_state(), epochs()) == before
    assert snapshot_dirs(data_dir) == [snap.name]


def test_the_store_lock_makes_a_second_run_fail_fast_with_no_wait(data_dir):
    snap = take_snapshot()
    with store_lock():
        with pytest.raises(StoreBusy, match=rf"Another data snapshot or restore is running \(pid {os.getpid()}\)"):
            take_snapshot(wait=False)
        with pytest.raises(StoreBusy):
            restore_snapshot(name=snap.name, wait=False)
    assert snapshot_dirs(data_dir) == [snap.name]
    take_snapshot(wait=False)


def test_leftovers_of_a_crashed_run_are_ignored_and_cleaned(data_dir):
    root = data_dir / "snapshots"
    root.mkdir()
    (root / ".tmp-20200101-000000.000-dead").mkdir()
    (root / ".tmp-20200101-000000.000-dead" / "db").mkdir()
    assert list_data_snapshots() == []
    snap = take_snapshot()
    assert snapshot_dirs(data_dir) == [snap.name]


def test_names_stay_ordered_when_the_clock_steps_back(tmp_path):
    import datetime as dt

    (tmp_path / "20300101-000000.999").mkdir()
    name = store.next_snapshot_name(tmp_path, now=dt.datetime(2029, 1, 1, tzinfo=dt.UTC))
    assert name == "20300101-000001.000"


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_postgres_without_pg_dump_is_a_clear_error(data_dir, monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(SnapshotToolMissing, match="pg_dump is not installed"):
        take_snapshot()
    assert snapshot_dirs(data_dir) == []


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_sqlite_snapshot_is_a_self_contained_checked_database(data_dir):
    build_state(data_dir)
    snap = take_snapshot()
    db = data_dir / "snapshots" / snap.name / "db" / "chartr.sqlite3"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM timeline_timelinerow").fetchone()[0] == 12
    finally:
        conn.close()


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_postgres_restore_failing_part_way_is_rolled_back(data_dir):
    """A dump whose table of contents is fine but whose data is damaged passes
    pg_restore --list; the restore itself must fail as one transaction."""
    build_state(data_dir)
    for agent_id in ("a0", "a1"):
        # Incompressible rows, so table data (not the table of contents) fills most of the dump.
        append_rows(agent_id, 500, filler=500)
    snap = take_snapshot()
    path = data_dir / "snapshots" / snap.name
    manifest = json.loads((path / "manifest.json").read_text())
    dump = path / manifest["database"]["file"]
    data = bytearray(dump.read_bytes())
    assert len(data) > 400_000
    for offset in range(len(data) * 3 // 4, len(data) * 3 // 4 + 64):
        data[offset] ^= 0x5A
    dump.write_bytes(bytes(data))
    _rehash_db(path, manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert subprocess.run(["pg_restore", "--list", str(dump)], capture_output=True).returncode == 0

    append_rows("a2", 5)
    before_db, before_epochs = database_state(), epochs()
    with pytest.raises(Exception, match="rolled back, so the database is unchanged") as failure:
        restore_snapshot(name=snap.name)
    assert "The pre-restore snapshot is" in str(failure.value)
    assert database_state() == before_db
    assert epochs() == before_epochs


def test_a_client_resuming_with_a_cursor_from_before_the_restore_gets_reset(data_dir):
    from rest_framework.test import APIClient

    from tokens.services import create_api_token

    _, raw = create_api_token(name="datadir-test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    agent = AgentFactory(agent_id="cursor-agent")
    url = f"/api/v1/agents/{agent.pk}/timeline"
    items = [{"item": {"type": "user_message", "text": f"m{n}"}} for n in range(3)]
    assert api.post(url, {"items": items}, format="json").status_code == 201
    snap = take_snapshot()
    assert api.post(url, {"items": items}, format="json").status_code == 201
    # The client has read up to seq 6 under the current epoch.
    page = api.get(url, {"direction": "after", "seq": 0}).json()
    cursor_epoch, cursor_seq = page["epoch"], page["rows"][-1]["seq"]
    assert (cursor_seq, page["reset"]) == (6, False)

    restore_snapshot(name=snap.name)

    resumed = api.get(url, {"direction": "after", "seq": cursor_seq, "epoch": cursor_epoch}).json()
    assert resumed["reset"] is True and resumed["epoch"] != cursor_epoch
    assert [row["seq"] for row in resumed["rows"]] == [1, 2, 3] and resumed["window"]["next_seq"] == 4


@pytest.mark.django_db
def test_restore_locks_tables_parents_first_like_the_writers_do():
    from datadir.services import _tables_parents_first

    order = _tables_parents_first()
    chain = ["registry_project", "registry_workspace", "snapshots_agentsnapshot", "timeline_timelinerow"]
    assert [order.index(table) for table in chain] == sorted(order.index(table) for table in chain)
    assert order.index("auth_user") < order.index("chartr_apitoken")
    assert len(order) == len(set(order))
