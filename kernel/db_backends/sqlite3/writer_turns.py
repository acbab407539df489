"""Writers of one process take turns on a SQLite database, in arrival order, before ``BEGIN IMMEDIATE``.

SQLite has one write lock per database. A connection that finds it taken waits
in SQLite's busy handler, which sleeps and tries again (1, 2, 5, ... up to 100
ms between tries): with many threads of one process writing, the lock often
lies free while every waiter sleeps, so throughput stays flat and the tail
grows long (docs/benchmarks.md). Inside a process, every transaction therefore
first takes its turn on a first-in first-out lock per database, and the
transaction that ends hands the turn straight to the one that has waited
longest. Writers in other processes still meet at SQLite's lock and its busy
timeout.

The backend (``base.py``) takes the turn just before BEGIN and gives it back as
soon as its connection is no longer in a transaction, however the transaction
ended: COMMIT, ROLLBACK, a BEGIN that failed or that the write fence refused,
the connection closed. Two guards keep a turn from being lost for good:

- a waiter that waits as long as SQLite's busy timeout gives up with the same
  "database is locked" SQLite would raise;
- if the thread holding the turn has died with its transaction open, the next
  waiter takes the turn over (SQLite itself then makes it wait for that
  connection, as it would without turns).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque

#: How often a waiter checks that the thread holding the turn is still alive.
HOLDER_CHECK_SECONDS = 1.0

_turns: dict[tuple[int, str], WriterTurns] = {}
_turns_mutex = threading.Lock()


def writer_turns_for(database_name: str) -> WriterTurns:
    """The turns of this process on the database ``database_name`` (a new process starts with its own)."""
    key = (os.getpid(), database_name)
    with _turns_mutex:
        turns = _turns.get(key)
        if turns is None:
            turns = _turns[key] = WriterTurns()
        return turns


class _Waiter:
    __slots__ = ("granted", "thread")

    def __init__(self, thread: threading.Thread):
        self.thread = thread
        self.granted = threading.Event()


class WriterTurns:
    """A first-in first-out lock: giving the turn back hands it to the longest waiter."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._holder: threading.Thread | None = None
        self._waiters: deque[_Waiter] = deque()

    @property
    def holder(self) -> threading.Thread | None:
        return self._holder

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def take(self, *, timeout: float) -> bool:
        """Wait for the turn, at most ``timeout`` seconds; False if it did not come."""
        waiter = _Waiter(threading.current_thread())
        with self._mutex:
            if self._holder is None:
                self._holder = waiter.thread
                return True
            self._waiters.append(waiter)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if waiter.granted.wait(max(min(remaining, HOLDER_CHECK_SECONDS), 0)):
                return True
            with self._mutex:
                if waiter.granted.is_set():
                    return True
                if not self._holder.is_alive():
                    self._pass_on()
                    continue
                if time.monotonic() >= deadline:
                    self._waiters.remove(waiter)
                    return False

    def give_back(self) -> None:
        with self._mutex:
            self._pass_on()

    def _pass_on(self) -> None:
        if self._waiters:
            waiter = self._waiters.popleft()
            self._holder = waiter.thread
            waiter.granted.set()
        else:
            self._holder = None
