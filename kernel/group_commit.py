"""Group commit: concurrent writes of one process share one transaction.

Callers of ``GroupCommit.run(work, lane=...)`` on the same lane queue up; the
first to find the lane idle becomes its leader and runs the queue's head, up to
``max_requests`` calls or ``max_weight`` units of work (always at least one), in
one transaction:

- each call in a savepoint of its own, so a call that raises takes back only its
  own writes and gets its own error, while the others go on;
- every caller gets its answer (result or error) only once the batch's COMMIT
  has returned: nothing is acknowledged before it is durable;
- a failure of the transaction itself (its BEGIN, say the write fence refusing it
  during a restore, or its COMMIT) reaches every call of the batch.

Once the COMMIT has returned, the leader answers the batch's other callers and
hands the lane to the next waiting caller, then runs the calls' commit hooks
(``transaction.on_commit``) and returns. No one waits on a timer: a batch is whatever queued while the previous one ran, so a
lone caller runs at once, in a transaction of its own (no savepoint). A caller
already inside an atomic block runs its work directly: its transaction is the
caller's.

Lanes say which calls may share a transaction. Where the database locks rows, a
batch holding locks on several rows could deadlock with another process locking
them in another order, so a lane is the row; where one write lock
covers the whole database (SQLite), one lane serves everything.

The work runs on the leader's thread and database connection: it must not rely
on thread-local state of its caller other than what it closes over.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, transaction

T = TypeVar("T")

logger = logging.getLogger(__name__)


class BatchLost(Exception):
    """The batch's transaction could not go on after a call failed (its savepoint could not be rolled back)."""


class _Call(Generic[T]):
    __slots__ = ("error", "failed_alone", "lead", "ready", "result", "savepoint", "weight", "work")

    def __init__(self, work: Callable[[], T], weight: int, savepoint: bool):
        self.work = work
        self.weight = weight
        self.savepoint = savepoint
        #: Set when the call is answered, or when it is handed the lane to lead.
        self.ready = threading.Event()
        self.lead = False
        self.result: T | None = None
        self.error: BaseException | None = None
        #: The call's own error, rolled back to its savepoint: a failure of the batch does not replace it.
        self.failed_alone = False

    def answer(self) -> T:
        if self.error is not None:
            raise self.error
        return self.result


class _Lane:
    __slots__ = ("leading", "queue")

    def __init__(self) -> None:
        self.queue: deque[_Call] = deque()
        self.leading = False


class GroupCommit:
    def __init__(self, *, max_requests: int = 64, max_weight: int = 2000, using: str = DEFAULT_DB_ALIAS):
        self.max_requests = max_requests
        self.max_weight = max_weight
        self.using = using
        self._mutex = threading.Lock()
        self._lanes: dict[Hashable, _Lane] = {}

    def run(self, work: Callable[[], T], *, lane: Hashable = None, weight: int = 1, savepoint: bool = True) -> T:
        """``work()``'s result (or error), once the transaction it ran in has committed (or failed).

        ``savepoint=False`` is for a work that does every write inside an atomic
        block of its own: nested in the batch's transaction, that block is its
        savepoint, and a second one around it would only cost round trips.
        """
        if transaction.get_connection(self.using).in_atomic_block:
            return work()
        call = _Call(work, weight, savepoint)
        with self._mutex:
            state = self._lanes.setdefault(lane, _Lane())
            state.queue.append(call)
            call.lead = not state.leading
            state.leading = True
        if not call.lead:
            call.ready.wait()
        if call.lead:
            self._lead(lane, state)
        return call.answer()

    def queued(self, lane: Hashable = None) -> int:
        """Calls waiting on ``lane`` (not yet taken into a batch)."""
        with self._mutex:
            state = self._lanes.get(lane)
            return len(state.queue) if state else 0

    def _lead(self, lane: Hashable, state: _Lane) -> None:
        """Run one batch from the head of the queue (the leader's own call is its head), then pass the lane on."""
        with self._mutex:
            batch = [state.queue.popleft()]
            weight = batch[0].weight
            while state.queue and len(batch) < self.max_requests and weight + state.queue[0].weight <= self.max_weight:
                weight += state.queue[0].weight
                batch.append(state.queue.popleft())
        finished = False

        def finish() -> None:
            nonlocal finished
            if finished:
                return
            finished = True
            self._pass_lane_on(lane, state)
            for call in batch[1:]:
                call.ready.set()

        try:
            self._run_batch(batch, committed=finish)
        finally:
            finish()

    def _pass_lane_on(self, lane: Hashable, state: _Lane) -> None:
        with self._mutex:
            if state.queue:
                successor = state.queue[0]
                successor.lead = True
                successor.ready.set()
            else:
                state.leading = False
                del self._lanes[lane]

    def _run_batch(self, batch: list[_Call], *, committed: Callable[[], None]) -> None:
        """Run the batch; ``committed()`` is called as soon as its COMMIT has returned."""
        if len(batch) == 1:
            # Alone: the call's own transaction, as if there were no group commit.
            call = batch[0]
            try:
                call.result = call.work()
            except BaseException as exc:
                call.error, call.failed_alone = exc, True
            return
        done = threading.Event()

        def on_commit() -> None:
            done.set()
            # The answers are final: the followers have them, and the next batch starts,
            # while this thread runs the calls' own commit hooks (a NOTIFY each, say).
            committed()

        try:
            with transaction.atomic(using=self.using):
                # Registered first, so it runs first after COMMIT; it also tells a failed
                # COMMIT from a failing commit hook of one of the calls.
                transaction.on_commit(on_commit, using=self.using)
                self._run_in_savepoints(batch)
        except BaseException as exc:
            if done.is_set():
                logger.exception("A commit hook failed after a group commit; the batch is committed")
                return
            for call in batch:
                if not call.failed_alone:
                    # The leader raises the error itself; every other caller gets a copy on its own thread.
                    call.error = exc if call is batch[0] else _for_each_caller(exc)

    def _run_in_savepoints(self, batch: list[_Call]) -> None:
        connection = transaction.get_connection(self.using)
        for call in batch:
            try:
                if call.savepoint:
                    with transaction.atomic(using=self.using):
                        call.result = call.work()
                else:
                    call.result = call.work()
            except Exception as exc:
                call.error, call.failed_alone = exc, True
            if connection.needs_rollback:
                raise BatchLost("The batch's transaction could not go on after a call failed.") from call.error


def _for_each_caller(error: BaseException) -> BaseException:
    """A copy of the batch's error for one caller: each raises it on its own thread."""
    if not isinstance(error, Exception):
        return RuntimeError(f"The group commit's leader was interrupted ({type(error).__name__}).")
    try:
        duplicate = copy.copy(error)
    except Exception:
        return error
    duplicate.__cause__ = error.__cause__
    return duplicate
