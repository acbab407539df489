"""One stream's bounded buffer of news from the hub (timeline/live/hub.py)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from timeline.live.messages import Closing, Resync


class Subscription:
    """One stream's buffer. Bounded: when it overflows, the buffered news is
    replaced by a single :class:`Resync`, so the stream goes back to the
    database instead of being dropped (provisional items in the dropped
    buffer are lost; they are ephemeral by definition)."""

    def __init__(
        self,
        unsubscribe: Callable[[Subscription], None],
        agent_id: str,
        *,
        capacity: int,
        token_id: int | None = None,
    ):
        #: The hub's, called once when the subscription closes.
        self._unsubscribe = unsubscribe
        self.agent_id = agent_id
        #: The API token the stream was opened with (or by a ticket it minted); None for the admin's.
        self.token_id = token_id
        self.capacity = capacity
        self.overflows = 0
        self._buffer: deque[tuple[int, Any]] = deque()
        # A bare future, not an asyncio.Event under wait_for: on Python 3.11 wait_for
        # makes a task per wait, and with a thousand subscribers that was a task per
        # subscriber per event.
        self._waiter: asyncio.Future | None = None
        #: One timer per subscription, re-armed only when it fires: arming one
        #: per wait was a timer handle per subscriber per event.
        self._timer: asyncio.TimerHandle | None = None
        self._timeout: float | None = None
        self._waiting_since = 0.0
        self.closed = False
        #: The channel's generation when this subscription joined.
        self.joined_generation = 0

    def put(self, generation: int, message: Any, *, wake: bool = True) -> None:
        """Buffer ``message``; with ``wake=False`` the reader is woken later by :meth:`wake`
        (the channel is reading what the message announces, so the reader need not)."""
        if len(self._buffer) >= self.capacity:
            self._buffer.clear()
            self.overflows += 1
            # The end of a stream is never lost in an overflow; everything else becomes a resync.
            message = message if isinstance(message, Closing) else Resync(self.agent_id)
            wake = True
        self._buffer.append((generation, message))
        if wake:
            self.wake()

    def wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self, timeout: float | None) -> tuple[int, Any] | None:
        """The next ``(generation, message)``, or None after ``timeout`` seconds without one."""
        if not self._buffer:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            self._timeout = timeout
            if timeout is not None:
                self._waiting_since = now = loop.time()
                timer = self._timer
                if timer is None or timer.when() > now + timeout:
                    if timer is not None:
                        timer.cancel()
                    self._timer = loop.call_at(now + timeout, self._time_up)
            try:
                await waiter
            finally:
                self._waiter = None
            if not self._buffer:
                return None
        return self._buffer.popleft()

    def _time_up(self) -> None:
        """The timer: time the wait in progress out if it has lasted ``timeout``, else wait on for the rest."""
        self._timer = None
        waiter, timeout = self._waiter, self._timeout
        if self.closed or waiter is None or waiter.done() or timeout is None:
            return
        loop = waiter.get_loop()
        due = self._waiting_since + timeout
        if loop.time() >= due:
            waiter.set_result(None)
        else:
            self._timer = loop.call_at(due, self._time_up)

    def pending(self) -> int:
        return len(self._buffer)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._unsubscribe(self)
