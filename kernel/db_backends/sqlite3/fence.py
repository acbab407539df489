"""The write fence on SQLite: a ``flock`` next to the database, checked under SQLite's write lock.

Every transaction begins with ``BEGIN IMMEDIATE`` (chartr/settings.py), so at
most one transaction at a time, in any process, holds the write lock. It asks
the fence while holding it: a non-blocking shared ``flock`` on
``<database dir>/.locks/write-fence``, let go at once. A restore closes the
fence with an exclusive ``flock`` on that file, then takes and drops SQLite's
write lock once: the transaction admitted last has committed by then, and every
later one finds the ``flock`` taken. The kernel drops the ``flock`` when its
holder exits or dies, so a crashed restore never leaves the fence closed.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel.db_backends.fence import DRAIN_SECONDS, FenceNotClosed, WriteFence
from kernel.write_fence import outside_write_fence

LOCK_DIRNAME = ".locks"
FENCE_FILENAME = "write-fence"

#: (pid, fence path) -> a descriptor of that file, one per process: opening it for every transaction would cost more.
_descriptors: dict[tuple[int, Path], int] = {}


def fence_path(database_name: str | os.PathLike) -> Path:
    return Path(database_name).resolve().parent / LOCK_DIRNAME / FENCE_FILENAME


def _open(path: Path) -> int:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


class SQLiteWriteFence(WriteFence):
    #: (database NAME, its fence path): resolving the path took a fifth of an append's CPU.
    _resolved: tuple[object, Path | None] | None = None

    @property
    def path(self) -> Path | None:
        """None for an in-memory database: no other process can reach it."""
        name = self.connection.settings_dict["NAME"]
        resolved = self._resolved
        if resolved is None or resolved[0] != name:
            path = None if self.connection.is_in_memory_db() else fence_path(name)
            resolved = self._resolved = (name, path)
        return resolved[1]

    def admits(self) -> bool:
        path = self.path
        if path is None:
            return True
        key = (os.getpid(), path)
        if key not in _descriptors:
            _descriptors[key] = _open(path)
        descriptor = _descriptors[key]
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return True

    @contextmanager
    def closed(self, *, drain_seconds: float = DRAIN_SECONDS) -> Iterator[None]:
        path = self.path
        if path is None:
            with outside_write_fence():
                yield
            return
        descriptor = _open(path)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            self._drain(drain_seconds)
            with outside_write_fence():
                yield
        finally:
            os.close(descriptor)

    def _drain(self, seconds: float) -> None:
        """Wait for the transaction admitted last: it holds SQLite's write lock until it ends."""
        waiter = sqlite3.connect(self.connection.settings_dict["NAME"], timeout=seconds, isolation_level=None)
        try:
            waiter.execute("BEGIN IMMEDIATE")
            waiter.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            raise FenceNotClosed(f"a write transaction was still running after {seconds:g}s ({exc})") from exc
        finally:
            waiter.close()
