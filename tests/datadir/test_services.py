"""The public entry points (datadir.services): CHARTR_SNAPSHOTS_KEEP=0, the store lock, crash leftovers."""

from __future__ import annotations

import os

import pytest

from datadir.errors import SnapshotsDisabled, StoreBusy
from datadir.lock import store_lock
from datadir.selectors import list_data_snapshots
from datadir.services import restore_snapshot, take_snapshot
from tests.datadir.conftest import snapshot_dirs

pytestmark = pytest.mark.django_db(transaction=True)


def test_keep_zero_disables_snapshots(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    with pytest.raises(SnapshotsDisabled, match="CHARTR_SNAPSHOTS_KEEP=0"):
        take_snapshot()
    assert not (data_dir / "snapshots").exists()


def test_restore_refuses_when_snapshots_are_disabled(data_dir, settings):
    snap = take_snapshot()
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    with pytest.raises(SnapshotsDisabled, match="could not be undone"):
        restore_snapshot(name=snap.name)
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
