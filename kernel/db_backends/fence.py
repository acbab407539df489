"""The write fence: a data restore keeps every write transaction out, in every process.

A restore snapshots the current state (the undo) and then replaces the
database. A write committed between the two would be in neither state, so
from the start of that snapshot until the restored database is in place the
restore holds the fence closed:

- every transaction a connection begins asks the fence first (``admits``),
  inside the transaction it has just begun. Refused, it rolls back, waits a
  moment and asks again, for up to ``CHARTR_MAINTENANCE_WAIT`` seconds, then
  fails with UnderMaintenance (503 ``maintenance`` with ``Retry-After``);
- closing the fence (``closed``) first makes every new transaction wait, then
  waits for the transactions already admitted to finish.

Where the fence lives differs per database, so each engine has its own class
(sqlite3/fence.py, postgresql/fence.py), picked by the connection wrapper's
``write_fence_class``. Both live where the database lives, so a restore run
from another process, or on PostgreSQL from another machine, holds every
server process back.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cached_property

from django.conf import settings

from kernel.errors import UnderMaintenance
from kernel.write_fence import FenceNotClosed, is_outside_write_fence

#: How often a refused transaction asks the fence again.
POLL_SECONDS = 0.1
#: How long closing the fence waits for admitted transactions to finish before giving up.
DRAIN_SECONDS = 300.0

__all__ = ["DRAIN_SECONDS", "POLL_SECONDS", "FenceNotClosed", "FencedTransactionsMixin", "WriteFence"]


class WriteFence(ABC):
    def __init__(self, connection) -> None:
        self.connection = connection

    @abstractmethod
    def admits(self) -> bool:
        """Whether the transaction the connection has just begun may go on: no restore holds the fence."""

    @abstractmethod
    def closed(self, *, drain_seconds: float = DRAIN_SECONDS) -> AbstractContextManager[None]:
        """Hold the fence closed for the block, once every transaction admitted earlier has
        finished (raises FenceNotClosed if that takes longer than ``drain_seconds``). The
        holding thread's own transactions are let through."""


class FencedTransactionsMixin:
    """For a DatabaseWrapper: every transaction it begins passes the write fence first."""

    write_fence_class: type[WriteFence]

    @cached_property
    def write_fence(self) -> WriteFence:
        return self.write_fence_class(self)

    def begin_fenced(self, begin: Callable[[], None], abandon: Callable[[], None]) -> None:
        """``begin`` a transaction and keep it if the fence admits it; else ``abandon`` it
        and try again until CHARTR_MAINTENANCE_WAIT has passed, then raise UnderMaintenance."""
        deadline = time.monotonic() + settings.CHARTR_MAINTENANCE_WAIT
        while True:
            begin()
            try:
                if is_outside_write_fence() or self.write_fence.admits():
                    return
            except BaseException:
                abandon()
                raise
            abandon()
            if time.monotonic() >= deadline:
                raise UnderMaintenance(
                    "A data restore is replacing the database; the write was not made. Retry shortly."
                )
            time.sleep(POLL_SECONDS)
