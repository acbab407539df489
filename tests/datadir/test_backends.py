"""The database backends (datadir.backends): one class per engine, picked from the connection's vendor."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from types import SimpleNamespace

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from datadir.backends import database_backend
from datadir.backends.postgresql import PostgreSQLBackend, tables_parents_first
from datadir.backends.sqlite import SQLiteBackend
from datadir.errors import SnapshotFailed, SnapshotToolMissing, StoreBusy
from datadir.lock import store_lock
from datadir.services import restore_snapshot, take_snapshot
from tests.datadir.conftest import append_rows, build_state, database_state, epochs, rehash_db, snapshot_dirs
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("vendor", "backend_class"), [("sqlite", SQLiteBackend), ("postgresql", PostgreSQLBackend)])
def test_each_vendor_picks_its_backend_class(vendor, backend_class):
    fake_connection = SimpleNamespace(vendor=vendor)
    backend = database_backend(fake_connection)
    assert type(backend) is backend_class
    assert backend.engine == vendor and backend.connection is fake_connection


def test_the_default_connection_picks_the_backend_of_its_engine():
    backend = database_backend()
    assert backend.engine == connection.vendor and backend.connection is connections[DEFAULT_DB_ALIAS]


def test_an_unsupported_vendor_is_refused():
    with pytest.raises(SnapshotFailed, match="Data snapshots support SQLite and PostgreSQL, not mysql."):
        database_backend(SimpleNamespace(vendor="mysql"))


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
    rehash_db(path, manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert subprocess.run(["pg_restore", "--list", str(dump)], capture_output=True).returncode == 0

    append_rows("a2", 5)
    before_db, before_epochs = database_state(), epochs()
    with pytest.raises(Exception, match="rolled back, so the database is unchanged") as failure:
        restore_snapshot(name=snap.name)
    assert "The pre-restore snapshot is" in str(failure.value)
    assert database_state() == before_db
    assert epochs() == before_epochs


@pytest.mark.django_db
def test_restore_locks_tables_parents_first_like_the_writers_do():
    order = tables_parents_first(connection)
    chain = ["registry_project", "registry_workspace", "snapshots_agentsnapshot", "timeline_timelinerow"]
    assert [order.index(table) for table in chain] == sorted(order.index(table) for table in chain)
    assert order.index("auth_user") < order.index("chartr_apitoken")
    assert len(order) == len(set(order))


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_on_postgres_instances_with_their_own_data_dirs_still_take_turns(data_dir, tmp_path):
    """Another instance's data dir has its own flock; the advisory lock in the shared database is what they share."""
    AgentFactory(agent_id="a0")
    # What take_snapshot holds on the other instance: its own data dir's flock, and the database's lock.
    other_flock = store_lock(data_dir=tmp_path / "other-instance-data")
    other_database_lock = database_backend().store_locked(wait=True)
    refused = pytest.raises(StoreBusy, match="another instance sharing this PostgreSQL database")
    with other_flock, other_database_lock, refused:
        take_snapshot(wait=False)
    assert snapshot_dirs(data_dir) == []
    assert take_snapshot(wait=False).name in snapshot_dirs(data_dir), "released when the holder's block ended"


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_on_sqlite_the_data_dir_lock_is_the_whole_story(data_dir, tmp_path):
    """SQLite serves one machine: another data dir is another database, and does not wait."""
    AgentFactory(agent_id="a0")
    with store_lock(data_dir=tmp_path / "elsewhere"):
        assert take_snapshot(wait=False).name in snapshot_dirs(data_dir)
