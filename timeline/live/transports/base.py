"""The interface every live transport implements, and the reconnect loop the listening ones share."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable

from timeline.live.messages import Message

logger = logging.getLogger("chartr.live")

#: Called on the event loop with one raw message received from another process.
PayloadReceiver = Callable[[str | bytes], None]


class LiveTransport(ABC):
    """Carries a hub's messages to the hubs of the other processes.

    The hub delivers to its own subscribers itself; a transport only sends
    (``publish``, from any thread) and listens (``start``, on the event loop),
    handing every payload it hears to the hub, which drops its own echoes.
    """

    #: The ``CHARTR_LIVE_TRANSPORT`` value that selects this backend.
    name = ""

    def __init__(self, *, channel_name: str, origin: str):
        self.channel_name = channel_name
        self.origin = origin
        #: Set while the listener is connected; None until ``start``.
        self.connected: asyncio.Event | None = None

    @abstractmethod
    def start(
        self, loop: asyncio.AbstractEventLoop, *, receive: PayloadReceiver, on_connect: Callable[[], None]
    ) -> None:
        """Start listening on ``loop`` (again, if the hub moved to a new loop).

        ``on_connect`` is called each time the listener (re)connects: news
        sent while it was not listening may have been missed.
        """

    #: Whether this transport sends an append's ``Committed`` inside the append's
    #: own transaction (``publish_in_transaction``) rather than after its commit.
    sends_with_transaction = False

    @abstractmethod
    def publish(self, message: Message) -> None:
        """Send ``message`` to the other processes. May block briefly and may raise; the hub logs."""

    def publish_in_transaction(self, message: Message) -> None:
        """Send ``message`` with the transaction in progress on Django's connection:
        the other processes get it when that transaction commits, never if it
        rolls back. Only for transports whose ``sends_with_transaction`` is true."""
        raise NotImplementedError(f"The {self.name} transport sends only after a commit.")

    def notify_arguments(self, message: Message) -> tuple[str, str] | None:
        """``(channel, payload)`` of the one ``pg_notify`` that sends ``message`` with the
        transaction in progress, for a caller to put in a statement of its own; None
        when ``publish_in_transaction`` must send it (several chunks, or not this transport)."""
        return None

    @abstractmethod
    async def aclose(self) -> None:
        """Stop listening."""

    def readiness_problem(self) -> str | None:
        """None while what this transport needs answers, else the readiness probe's reason code.
        Called from a request thread (``/readyz``); must stay short."""
        return None


class ListeningTransport(LiveTransport):
    """A transport with one long-lived listening connection, reconnected with backoff."""

    #: Logged when the connection drops.
    lost_message = "Live transport connection lost; reconnecting"
    INITIAL_BACKOFF = 0.2
    MAX_BACKOFF = 5.0

    #: The readiness probe's reason code while the listening connection is down.
    unreachable_reason = ""

    def __init__(self, *, channel_name: str, origin: str):
        super().__init__(channel_name=channel_name, origin=origin)
        self._task: asyncio.Task | None = None

    def listener_lost(self) -> bool:
        """Whether the listener runs (a stream started it, on a loop still open) and is not connected now."""
        task, connected = self._task, self.connected
        if task is None or connected is None or task.done() or task.get_loop().is_closed():
            return False
        return not connected.is_set()

    def readiness_problem(self) -> str | None:
        return self.unreachable_reason if self.listener_lost() else None

    def start(
        self, loop: asyncio.AbstractEventLoop, *, receive: PayloadReceiver, on_connect: Callable[[], None]
    ) -> None:
        self.connected = asyncio.Event()
        self._task = loop.create_task(self._listen_forever(receive, on_connect), name="chartr-live-listen")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass

    @abstractmethod
    async def listen_once(self, receive: PayloadReceiver, subscribed: Callable[[], None]) -> None:
        """Connect, subscribe, call ``subscribed()``, then hand every payload to
        ``receive`` until the connection fails (by raising)."""

    async def _listen_forever(self, receive: PayloadReceiver, on_connect: Callable[[], None]) -> None:
        connected = self.connected
        assert connected is not None
        backoff = self.INITIAL_BACKOFF

        def subscribed() -> None:
            nonlocal backoff
            backoff = self.INITIAL_BACKOFF
            on_connect()
            connected.set()

        while True:
            try:
                await self.listen_once(receive, subscribed)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning(self.lost_message, exc_info=True)
            connected.clear()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.MAX_BACKOFF)
