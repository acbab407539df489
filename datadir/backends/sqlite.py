"""Data snapshots of a SQLite database: the online backup API, both ways.

The backup API copies the database page by page inside one transaction of
the source, which is what makes the copy consistent while other processes
keep writing, and what makes the restore atomic for them.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from datadir import store
from datadir.backends.base import CheckedDump, DatabaseBackend, DumpContents, DumpRejected, quote_name
from datadir.errors import SnapshotFailed
from snapshots.models import new_timeline_epoch
from timeline.models import TimelineHead
from timeline.services import rotate_epochs_sql


class SQLiteBackend(DatabaseBackend):
    engine = "sqlite"
    dump_name = store.SQLITE_DUMP_NAME

    def live_files(self) -> tuple[set[str], set[tuple[int, int]]]:
        """The live database and its sidecars, if they are files at all."""
        name = str(self.connection.settings_dict["NAME"])
        if not name or name == ":memory:" or name.startswith("file:"):
            return set(), set()
        base = os.path.abspath(name)
        paths = {base + suffix for suffix in ("", "-wal", "-shm", "-journal")}
        inodes = set()
        for path in paths:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            inodes.add((st.st_dev, st.st_ino))
        return paths, inodes

    def table_names(self, cursor: Any) -> list[str]:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        return [row[0] for row in cursor.fetchall()]

    def dump(self, target: Path) -> DumpContents:
        live = self._live_connection()
        copy = sqlite3.connect(target)
        try:
            # pages=-1 copies every page in one step, inside one read transaction
            # of the source: a consistent state even while other processes write.
            live.backup(copy, pages=-1)
            # The copied header says WAL; a snapshot should be one self-contained file.
            copy.execute("PRAGMA journal_mode=DELETE")
            contents = self.contents(copy.cursor())
        finally:
            copy.close()
        return contents

    def verify(self, dump: Path, *, sha256: str, expected_tables: dict[str, int], work: Path) -> CheckedDump:
        """Check a private copy (integrity, row counts) and give it new epochs
        already, so restore() only has to copy it in."""
        working = work / self.dump_name
        shutil.copyfile(dump, working)
        if store.hash_file(working) != sha256:
            raise DumpRejected(f"{dump} changed while it was being read")
        try:
            copy = _open_copy(working)
            try:
                self._check_copy(copy, dump, expected_tables)
                agents = _rotate_epochs_in_copy(copy)
            finally:
                copy.close()
        except sqlite3.DatabaseError as exc:
            raise DumpRejected(f"{dump} is not a readable SQLite database: {exc}") from None
        return CheckedDump(path=working, agents_with_new_epoch=agents)

    def restore(self, checked: CheckedDump) -> int:
        live = self._live_connection()
        source = sqlite3.connect(checked.path)
        try:
            # The backup API in the other direction: all pages are written under
            # the live database's write lock and committed at once, so readers in
            # other processes see the state before or after, never a mix.
            source.backup(live, pages=-1)
        finally:
            source.close()
        return checked.agents_with_new_epoch

    def _live_connection(self) -> sqlite3.Connection:
        # The backup API reads and writes through this connection: inside a
        # transaction it would copy (or clobber) uncommitted work.
        if self.connection.in_atomic_block:
            raise SnapshotFailed("Data snapshots and restores cannot run inside a database transaction.")
        self.connection.ensure_connection()
        return self.connection.connection

    def _check_copy(self, copy: sqlite3.Connection, dump: Path, expected_tables: dict[str, int]) -> None:
        verdict = [row[0] for row in copy.execute("PRAGMA integrity_check")]
        if verdict != ["ok"]:
            raise DumpRejected(f"{dump} fails PRAGMA integrity_check: {'; '.join(verdict[:5])}")
        counts = self.count_rows(copy.cursor())
        if counts != expected_tables:
            differing = sorted(t for t in set(counts) | set(expected_tables) if counts.get(t) != expected_tables.get(t))
            detail = ", ".join(f"{t} has {counts.get(t)}, manifest {expected_tables.get(t)}" for t in differing[:5])
            raise DumpRejected(f"row counts in {dump} do not match the manifest: {detail}")


def _open_copy(path: Path) -> sqlite3.Connection:
    """A raw connection to a snapshot copy, with REGEXP as Django's backend defines it
    on its own connections: the CHECK constraints of a snapshot taken before
    ``snapshots`` 0013 and ``tokens`` 0003 call it (today's schema needs no such function)."""
    conn = sqlite3.connect(path)
    conn.create_function("REGEXP", 2, _regexp, deterministic=True)
    return conn


def _regexp(pattern: str | None, value: object) -> bool | None:
    """``value REGEXP pattern`` as Django's SQLite backend answers it (``re.search``; NULL for NULL)."""
    if pattern is None or value is None:
        return None
    return re.search(pattern, value if isinstance(value, str) else str(value)) is not None


def _rotate_epochs_in_copy(conn: sqlite3.Connection) -> int:
    table = TimelineHead._meta.db_table
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
        return 0
    conn.create_function("chartr_new_timeline_epoch", 0, new_timeline_epoch)
    count = conn.execute(rotate_epochs_sql(quote_name, new_epoch="chartr_new_timeline_epoch()")).rowcount
    conn.commit()
    return count
