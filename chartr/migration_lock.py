"""One `migrate` at a time, however many workers or replicas start together.

Django's `migrate` is not safe to run concurrently: two processes both see a
migration as unapplied, and the slower one fails on "table already exists" or
records it twice. Every start therefore takes a lock that lives where the
database lives, applies what is missing, and releases it; whoever waited then
finds nothing left to apply.

- SQLite: an exclusive ``flock`` on ``<database dir>/.locks/migrate`` (for the
  default database that is ``<data dir>/.locks/migrate``). Every process that
  can open the database file can see this lock file too.
- PostgreSQL: a session-level ``pg_advisory_lock`` held on a connection of its
  own, so nothing `migrate` does to its connection can drop the lock early.
"""

from __future__ import annotations

import fcntl
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import DEFAULT_DB_ALIAS, connections

from kernel.engines import for_engine

#: A fixed 32-bit key, derived from a name so other tools are unlikely to reuse it.
ADVISORY_LOCK_KEY = zlib.crc32(b"chartr.migrate")
LOCK_DIRNAME = ".locks"
LOCK_FILENAME = "migrate"


def sqlite_lock_path(database_name: str | os.PathLike) -> Path:
    return Path(database_name).resolve().parent / LOCK_DIRNAME / LOCK_FILENAME


@contextmanager
def _sqlite_lock(alias: str, on_wait: Callable[[], None]) -> Iterator[None]:
    connection = connections[alias]
    if connection.is_in_memory_db():
        # Nobody else can reach an in-memory database.
        yield
        return
    path = sqlite_lock_path(connection.settings_dict["NAME"])
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        # Closing the descriptor releases the lock.
        os.close(fd)


@contextmanager
def _postgres_lock(alias: str, on_wait: Callable[[], None]) -> Iterator[None]:
    lock_connection = connections[alias].copy()
    try:
        with lock_connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
            if not cursor.fetchone()[0]:
                on_wait()
                cursor.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
        try:
            yield
        finally:
            with lock_connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_KEY])
    finally:
        lock_connection.close()


@contextmanager
def migration_lock(alias: str = DEFAULT_DB_ALIAS, *, on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Hold the migration lock for ``alias``; call ``on_wait`` once if another process has it."""
    connection = connections[alias]
    lock = for_engine(
        connection, {"sqlite": _sqlite_lock, "postgresql": _postgres_lock}, unsupported="The migration lock supports"
    )
    with lock(alias, on_wait):
        yield
