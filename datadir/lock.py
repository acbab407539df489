"""The store lock: one snapshot or restore at a time, across processes.

An exclusive ``flock(2)`` on ``<data dir>/.locks/store``. Where the database
is shared by several machines (PostgreSQL), the services also take an
advisory lock in it (``DatabaseBackend.store_locked``), since each instance
has its own data dir. The kernel drops the flock when the holder's file
descriptor closes, including when the holder dies, so a crashed run never
leaves a stale lock behind. The holder's pid is written into
the file only to make the "busy" message useful; the lock itself is the flock.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from datadir.errors import StoreBusy
from kernel.files import ensure_private_dir

LOCKS_DIRNAME = ".locks"
STORE_LOCK_NAME = "store"


def store_lock_path(data_dir: Path | None = None) -> Path:
    return Path(data_dir or settings.DATA_DIR) / LOCKS_DIRNAME / STORE_LOCK_NAME


@contextmanager
def store_lock(*, wait: bool = True, data_dir: Path | None = None) -> Iterator[Path]:
    """Hold the exclusive store lock for the duration of the block.

    With ``wait=False`` a lock held elsewhere raises StoreBusy at once instead
    of waiting for it.
    """
    path = store_lock_path(data_dir)
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise StoreBusy(
                "Another data snapshot or restore is running"
                + (f" (pid {holder})" if holder.isdigit() else "")
                + f"; it holds the lock {path}. Try again when it has finished, or run without --no-wait to wait for it."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)
