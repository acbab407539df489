"""Taking a data snapshot (datadir.services.take): layout, manifest, change list, hard links, rotation."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from django.db import connection

from datadir import store
from datadir.selectors import list_data_snapshots
from datadir.services import take_snapshot
from tests.datadir.conftest import append_rows, build_state, snapshot_dirs

pytestmark = pytest.mark.django_db(transaction=True)


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
    # rows the conftest's raw append adds move no counter: the summary names no record and no table
    assert (
        second.summary == "no project, workspace, agent or timeline changed; data files: 1 added, 1 changed, 1 removed"
    )
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
    # du counts each inode once: the four snapshots' files cost about one copy of big.bin plus the
    # small parts. (Their database dumps are left out: each copies the test database, whose size
    # depends on what the tests before this one wrote.)
    files = [str(data_dir / "snapshots" / name / "files") for name in names]
    du = subprocess.run(["du", "-skc", *files], capture_output=True, text=True, check=True).stdout.splitlines()
    one_snapshot_kib, used_kib = int(du[0].split()[0]), int(du[-1].split()[0])
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


def test_an_incomplete_snapshot_is_listed_as_such(data_dir):
    snap = take_snapshot()
    (data_dir / "snapshots" / snap.name / "manifest.json").unlink()
    [info] = list_data_snapshots()
    assert not info.complete and "manifest.json is missing" in info.problem


def test_names_stay_ordered_when_the_clock_steps_back(tmp_path):
    import datetime as dt

    (tmp_path / "20300101-000000.999").mkdir()
    name = store.next_snapshot_name(tmp_path, now=dt.datetime(2029, 1, 1, tzinfo=dt.UTC))
    assert name == "20300101-000001.000"
