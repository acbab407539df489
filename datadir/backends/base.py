"""What a database engine has to provide for data snapshots.

The phases (datadir.services.take, .verify, .restore) are written once
against this interface; each engine implements it in one class of its own
(sqlite.py, postgresql.py), picked by datadir.backends.database_backend from
the connection's vendor, the way django.contrib.sessions.backends picks a
SessionStore.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from django.db.backends.base.base import BaseDatabaseWrapper

from datadir.errors import SnapshotFailed
from datadir.records import read_records
from kernel.write_fence import FenceNotClosed


@dataclass(frozen=True)
class DumpContents:
    """What a dump holds, read from exactly the copy it made."""

    #: Row count per table.
    tables: dict[str, int]
    #: Projects, workspaces and agents in the operator's words (datadir.records.read_records).
    records: dict[str, dict[str, list]]


class DumpRejected(Exception):
    """A dump failed its content check. The message says why; the verify phase
    turns it into SnapshotCorrupt, naming the snapshot."""


@dataclass(frozen=True)
class CheckedDump:
    """A dump that passed DatabaseBackend.verify, ready for DatabaseBackend.restore."""

    #: SQLite: a private working copy, already checked and with new epochs.
    #: PostgreSQL: the dump inside the snapshot.
    path: Path
    agents_with_new_epoch: int = 0


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DatabaseBackend(ABC):
    #: The engine name written into manifests: the vendor of the connections it serves.
    engine: ClassVar[str]
    #: File name of the dump inside a snapshot's db/ directory.
    dump_name: ClassVar[str]

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection

    @contextmanager
    def writes_held_back(self) -> Iterator[None]:
        """Keep every write transaction, in every process, out of the database for the block.

        Writers wait (up to CHARTR_MAINTENANCE_WAIT, then 503 ``maintenance``);
        the block starts once the writes already under way have committed.
        The fence itself is the connection's (kernel/db_backends/fence.py):
        every transaction passes it, whoever opens it."""
        with ExitStack() as stack:
            try:
                stack.enter_context(self.connection.write_fence.closed())
            except FenceNotClosed as exc:
                raise SnapshotFailed(f"Could not hold writes back: {exc}. Nothing was changed.") from exc
            yield

    @contextmanager
    def store_locked(self, *, wait: bool) -> Iterator[None]:
        """Where the engine's database is shared by several machines, hold the store lock there too.

        The data dir's flock (datadir.lock) is seen by one machine only. An
        engine whose database one machine owns (SQLite) needs nothing more:
        raise StoreBusy when ``wait`` is false and another machine holds it.
        """
        yield

    def live_files(self) -> tuple[set[str], set[tuple[int, int]]]:
        """Paths and (device, inode) pairs of the live database inside the data
        dir: the file copy leaves them out, because dump() copies the database.
        Empty for an engine whose database lives elsewhere."""
        return set(), set()

    @abstractmethod
    def dump(self, target: Path) -> DumpContents:
        """Copy the whole database, consistently, into the new file ``target``;
        what exactly that copy holds (``contents``)."""

    @abstractmethod
    def verify(self, dump: Path, *, sha256: str, expected_tables: dict[str, int], work: Path) -> CheckedDump:
        """Check a dump's content and prepare it for restore(), using the private
        directory ``work``; raises DumpRejected, changing nothing live.

        ``dump`` already matched ``sha256`` from the manifest; a backend that
        goes on from a copy checks that the copy matches it too."""

    @abstractmethod
    def restore(self, checked: CheckedDump) -> int:
        """Replace the live database with the checked dump in one atomic step,
        giving every agent a new timeline epoch in that same step; how many agents got one."""

    @abstractmethod
    def table_names(self, cursor: Any) -> list[str]:
        """The tables the DB-API ``cursor`` sees, sorted by name."""

    def contents(self, cursor: Any) -> DumpContents:
        """Row counts and records as the DB-API ``cursor`` sees them."""
        return DumpContents(tables=self.count_rows(cursor), records=read_records(cursor))

    def count_rows(self, cursor: Any) -> dict[str, int]:
        """Row count of every table the DB-API ``cursor`` sees."""
        counts = {}
        for table in self.table_names(cursor):
            cursor.execute(f"SELECT count(*) FROM {quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
        return counts
