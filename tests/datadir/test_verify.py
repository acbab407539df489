"""Checking a snapshot before a restore (datadir.services.verify): a bad one is refused and nothing changes."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from datadir.errors import EngineMismatch, SnapshotCorrupt, SnapshotNotFound
from datadir.services import restore_snapshot, take_snapshot
from tests.datadir.conftest import (
    append_rows,
    build_state,
    database_state,
    epochs,
    file_state,
    rehash_db,
    snapshot_dirs,
)

pytestmark = pytest.mark.django_db(transaction=True)


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
    rehash_db(path, manifest)
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


def test_dry_run_checks_and_changes_nothing(data_dir):
    build_state(data_dir)
    snap = take_snapshot()
    append_rows("a0", 2)
    before = database_state(), epochs()
    result = restore_snapshot(name=snap.name, dry_run=True)
    assert result.dry_run and result.undo_snapshot is None
    assert (database_state(), epochs()) == before
    assert snapshot_dirs(data_dir) == [snap.name]
