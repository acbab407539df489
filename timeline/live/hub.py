"""The per-process live hub: who is subscribed to which agent, and how news reaches them.

Within a process the hub fans out in memory. Across processes its transport
(``timeline.live.transports``) carries the same messages. Every message
carries the sending process's ``origin``; a process delivers its own messages
directly and ignores their echo from the transport. A poll of the subscribed
agents' heads is the safety net for news that never came.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

from django.conf import settings

from kernel import draining
from snapshots.signals import agents_changed
from timeline.live import messages, reads
from timeline.live.heap import make_heap_trimmer
from timeline.live.messages import AgentsChanged, Closing, Committed, Message, Provisional, Resync, decode_message
from timeline.live.reads import DatabaseRunner, LiveBatch
from timeline.live.subscription import Subscription
from timeline.live.transports.base import LiveTransport
from timeline.live.transports.factory import make_transport
from timeline.signals import set_live_notice, timeline_committed, timeline_updated
from tokens.selectors import ended_token_ids

logger = logging.getLogger("chartr.live")


class Channel:
    """The subscribers of one agent, plus single-flight database reads.

    ``generation`` counts the news dispatched to this channel. A read started at
    generation g saw everything committed before news g+1 was dispatched, so a
    subscriber that has consumed news up to g can share it instead of issuing
    its own query; with 100 subscribers on one agent an append costs one read.
    """

    def __init__(self, agent_id: str):
        self.agent_id = agent_id
        self.subscribers: set[Subscription] = set()
        self.generation = 0
        self.known: tuple[int, str, int, int] | None = None  # (head_seq, epoch, version, update_seq) last seen
        #: The seq the latest finished read left its readers at; None before the first.
        self.tip: int | None = None
        #: after_seq -> (generation when the read started, its future); reads in flight
        #: and finished ones still current, shared by subscribers at the same cursor.
        self._reads: dict[int, tuple[int, asyncio.Future]] = {}

    #: Finished reads kept for sharing, per channel. Each holds up to a batch of
    #: encoded rows, so a burst of reconnects at many different cursors on a
    #: quiet agent must not pin them all; reads still in flight are never dropped.
    MAX_KEPT_READS = 32

    def _forget_oldest_finished_reads(self) -> None:
        excess = len(self._reads) - self.MAX_KEPT_READS
        if excess <= 0:
            return
        for key in [k for k, (_, future) in self._reads.items() if future.done()][:excess]:
            del self._reads[key]

    def dispatch(self, message: Any) -> None:
        self.generation += 1
        for subscriber in list(self.subscribers):
            subscriber.put(self.generation, message)

    def dispatch_committed(self, hub: Hub, message: Committed, *, limit: int) -> None:
        """Committed news, read once for every subscriber at the channel's tip.

        The read starts here, before anyone is woken, and the subscribers wake
        when it is done: each then finds it finished in ``read`` and sends its
        pre-encoded frames without a query, a wait or a future of its own.
        A subscriber elsewhere (catching up, another epoch) reads for itself.
        """
        tip = self.tip
        if tip is None or message.head_seq <= tip:
            self.dispatch(message)
            return
        self.generation += 1
        future = self._start_read(hub, after_seq=tip, limit=limit)
        subscribers = list(self.subscribers)
        for subscriber in subscribers:
            subscriber.put(self.generation, message, wake=False)

        def wake_all(_: asyncio.Future) -> None:
            for subscriber in subscribers:
                subscriber.wake()

        future.add_done_callback(wake_all)

    async def read(self, hub: Hub, *, after_seq: int, min_generation: int, limit: int) -> LiveBatch:
        entry = self._reads.get(after_seq)
        if entry is not None and entry[0] >= min_generation:
            future = entry[1]
        else:
            future = self._start_read(hub, after_seq=after_seq, limit=limit)
        if future.done():
            return future.result()
        return await asyncio.shield(future)

    def _start_read(self, hub: Hub, *, after_seq: int, limit: int) -> asyncio.Future:
        # Reads started before the latest news cannot serve anyone who has seen it.
        for key in [k for k, (generation, _) in self._reads.items() if generation < self.generation]:
            del self._reads[key]
        future = asyncio.ensure_future(hub.db.run(hub.read_batch, self.agent_id, after_seq, limit))
        self._reads[after_seq] = (self.generation, future)
        self._forget_oldest_finished_reads()

        def settle(done: asyncio.Future, key: int = after_seq) -> None:
            if done.cancelled() or done.exception() is not None:
                if self._reads.get(key, (0, None))[1] is done:
                    del self._reads[key]
                return
            rows = done.result().rows
            # Where the readers of this batch stand once they sent it: the next news is read from there.
            self.tip = rows[-1][0] if rows else key

        future.add_done_callback(settle)
        return future


class Hub:
    #: The blocking reads, run on ``self.db``; attributes so a test can count them.
    read_batch = staticmethod(reads.read_batch)
    read_heads = staticmethod(reads.read_heads)
    read_ended_tokens = staticmethod(ended_token_ids)

    def __init__(
        self,
        *,
        buffer_size: int | None = None,
        poll_interval: float | None = None,
        transport: str | LiveTransport | None = None,
    ):
        self.origin = uuid.uuid4().hex[:12]
        self.buffer_size = buffer_size or settings.CHARTR_SSE_BUFFER_SIZE
        self.poll_interval = poll_interval or settings.CHARTR_LIVE_POLL_SECONDS
        #: Rows per read. Read once: a settings lookup costs more than the rest of a subscriber's turn.
        self.batch_size = settings.CHARTR_SSE_BATCH_SIZE
        if not isinstance(transport, LiveTransport):
            transport = make_transport(transport, origin=self.origin)
        self.transport = transport
        self.db = DatabaseRunner(threads=settings.CHARTR_LIVE_DB_THREADS)
        self.channels: dict[str, Channel] = {}
        #: token id -> the open subscriptions of its streams (the poll ends them once it is revoked).
        self.by_token: dict[int, set[Subscription]] = {}
        self.heap = make_heap_trimmer(delay=settings.CHARTR_HEAP_TRIM_SECONDS)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task] = []

    # -- lifecycle (event-loop side) --

    def _ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self.loop is loop and not loop.is_closed():
            return
        self.loop = loop
        self._tasks = [loop.create_task(self._poll_forever(), name="chartr-live-poll")]
        self.transport.start(loop, receive=self.receive_payload, on_connect=self.resync_all)

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.transport.aclose()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []
        self.loop = None
        await asyncio.to_thread(self.db.shutdown)

    def subscribe(self, agent_id: str, *, token_id: int | None = None) -> Subscription:
        """Start buffering news for ``agent_id`` (for a stream opened with the API token
        ``token_id``, which the poll watches). Call from the event loop."""
        self._ensure_started()
        channel = self.channels.get(agent_id)
        if channel is None:
            channel = self.channels[agent_id] = Channel(agent_id)
        subscription = Subscription(self._unsubscribe, agent_id, capacity=self.buffer_size, token_id=token_id)
        subscription.joined_generation = channel.generation
        channel.subscribers.add(subscription)
        if token_id is not None:
            self.by_token.setdefault(token_id, set()).add(subscription)
        if draining.is_draining():
            # Subscribed after the streams were told to end: this one ends too.
            subscription.put(channel.generation, Closing(agent_id))
        return subscription

    async def wait_listening(self, timeout: float) -> bool:
        """Wait (bounded) until the transport listener is connected; news sent by
        other processes before that is only caught up by the poll."""
        connected = self.transport.connected
        if connected is None:
            return False
        try:
            await asyncio.wait_for(connected.wait(), timeout)
            return True
        except TimeoutError:
            return False

    def _unsubscribe(self, subscription: Subscription) -> None:
        streams = self.by_token.get(subscription.token_id)
        if streams is not None:
            streams.discard(subscription)
            if not streams:
                del self.by_token[subscription.token_id]
        channel = self.channels.get(subscription.agent_id)
        if channel is None:
            return
        channel.subscribers.discard(subscription)
        if not channel.subscribers:
            del self.channels[subscription.agent_id]

    def subscriber_count(self, agent_id: str | None = None) -> int:
        if agent_id is not None:
            channel = self.channels.get(agent_id)
            return len(channel.subscribers) if channel else 0
        return sum(len(c.subscribers) for c in self.channels.values())

    async def read(self, subscription: Subscription, *, after_seq: int, min_generation: int) -> LiveBatch:
        channel = self.channels.get(subscription.agent_id)
        if channel is None or subscription.closed:
            return await self.db.run(self.read_batch, subscription.agent_id, after_seq, self.batch_size)
        return await channel.read(self, after_seq=after_seq, min_generation=min_generation, limit=self.batch_size)

    # -- delivery (event-loop side) --

    def deliver(self, message: Any) -> None:
        """Hand ``message`` to the local subscribers it concerns. Never blocks."""
        if isinstance(message, Committed):
            channel = self.channels.get(message.agent_id)
            if channel is not None:
                if channel.known is not None and message.head_seq > channel.known[0]:
                    channel.known = (message.head_seq, message.epoch, *channel.known[2:])
                channel.dispatch_committed(self, message, limit=self.batch_size)
        elif isinstance(message, AgentsChanged):
            for channel in self._channels_of(message.agent_ids):
                channel.dispatch(message)
        elif isinstance(message, (Provisional, Resync, messages.Updated)):
            channel = self.channels.get(message.agent_id)
            if channel is not None:
                channel.dispatch(message)

    def _channels_of(self, agent_ids: tuple[str, ...]) -> list[Channel]:
        """The channels of those of ``agent_ids`` with subscribers here, by the cheaper lookup
        (an archive cascade can name thousands of agents)."""
        if len(agent_ids) <= len(self.channels):
            found = [self.channels.get(agent_id) for agent_id in agent_ids]
            return [channel for channel in found if channel is not None]
        wanted = set(agent_ids)
        return [channel for agent_id, channel in self.channels.items() if agent_id in wanted]

    def resync_all(self) -> None:
        for channel in list(self.channels.values()):
            channel.dispatch(Resync(channel.agent_id))

    def end_streams(self) -> None:
        """Tell every open stream to finish (the process is draining). Event-loop side."""
        for channel in list(self.channels.values()):
            channel.dispatch(Closing(channel.agent_id))

    def end_streams_soon(self) -> None:
        """``end_streams`` on the hub's loop; callable from any thread or a signal handler."""
        self._call_soon(self.end_streams)

    def _call_soon(self, callback, *args) -> None:
        """``callback(*args)`` on the hub's loop, if it runs; from any thread."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(callback, *args)
            except RuntimeError:  # the loop closed in between
                pass

    def receive_payload(self, payload: str | bytes) -> None:
        """Handle one message from the transport (event-loop side)."""
        try:
            origin, message = decode_message(payload)
        except ValueError:
            logger.warning("Dropping a malformed live message", exc_info=True)
            return
        if origin != self.origin:
            self.deliver(message)

    # -- publishing (any thread) --

    def publish(self, message: Message, *, sent: bool = False) -> None:
        """Deliver locally and send to the other processes (``sent``: the
        transport already has it). Never raises: the caller has usually just
        committed, and its client must get its answer."""
        self._call_soon(self.deliver, message)
        if sent:
            return
        try:
            self.transport.publish(message)
        except Exception:
            logger.warning("Could not send live %s to other processes", type(message).__name__, exc_info=True)

    # -- the safety net (event-loop side) --

    async def _poll_forever(self) -> None:
        """Notice commits and agent snapshot changes whose news never came."""
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                await self.poll_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("Live poll failed", exc_info=True)

    async def end_streams_of_ended_tokens(self) -> None:
        """End the streams whose token was revoked (in any process: it is read from the database),
        and those of the tickets it minted; their clients' reconnects get 401."""
        if not self.by_token:
            return
        ended = await self.db.run(self.read_ended_tokens, list(self.by_token))
        for token_id in ended:
            for subscription in list(self.by_token.get(token_id, ())):
                channel = self.channels.get(subscription.agent_id)
                subscription.put(channel.generation if channel else 0, Closing(subscription.agent_id))

    async def poll_once(self) -> None:
        await self.end_streams_of_ended_tokens()
        agent_ids = list(self.channels)
        if not agent_ids:
            return
        heads = await self.db.run(self.read_heads, agent_ids)
        for agent_id in agent_ids:
            channel = self.channels.get(agent_id)
            if channel is None:
                continue
            seen = heads.get(agent_id)
            previous, channel.known = channel.known, seen
            if seen is None or previous is None:
                # Gone, or first look: let the subscribers check for themselves.
                channel.dispatch(Resync(agent_id))
            elif seen[:2] != previous[:2]:
                channel.dispatch(Committed(agent_id, seen[0], seen[1]))
            elif seen[2] != previous[2]:
                channel.dispatch(AgentsChanged((agent_id,), "changed"))
            if seen is not None and previous is not None and seen[3] > previous[3]:
                channel.dispatch(messages.Updated(agent_id, seen[3], 0, seen[1]))


# --- The process-wide hub and the signal receivers ---------------------------------

_hub: Hub | None = None
_hub_lock = threading.Lock()


def get_hub() -> Hub:
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = Hub()
        return _hub


def transport_readiness() -> str | None:
    """The readiness probe's check of this process's live transport (kernel.readiness)."""
    return get_hub().transport.readiness_problem()


def set_hub(hub: Hub | None) -> Hub | None:
    """Replace the process-wide hub (tests); returns the previous one."""
    global _hub
    with _hub_lock:
        previous, _hub = _hub, hub
        return previous


class CommittingNotice:
    """``timeline.signals.LiveNotice`` for the process's hub: inside the append's
    transaction, a transport that sends with it (PostgreSQL's NOTIFY) does so."""

    def arguments(self, *, agent_id: str, head_seq: int, epoch: str) -> tuple[str, str] | None:
        transport = get_hub().transport
        if not transport.sends_with_transaction:
            return None
        return transport.notify_arguments(Committed(agent_id=agent_id, head_seq=head_seq, epoch=epoch))

    def send(self, *, agent_id: str, head_seq: int, epoch: str) -> None:
        transport = get_hub().transport
        if transport.sends_with_transaction:
            transport.publish_in_transaction(Committed(agent_id=agent_id, head_seq=head_seq, epoch=epoch))


def on_timeline_committed(sender, *, agent_id: str, head_seq: int, epoch: str, **kwargs) -> None:
    hub = get_hub()
    message = Committed(agent_id=agent_id, head_seq=head_seq, epoch=epoch)
    hub.publish(message, sent=hub.transport.sends_with_transaction)


def on_timeline_updated(sender, *, agent_id: str, seq: int, update_seq: int, epoch: str, **kwargs) -> None:
    get_hub().publish(messages.Updated(agent_id=agent_id, update_seq=update_seq, seq=seq, epoch=epoch))


def on_agents_changed(sender, *, agent_ids, reason: str, **kwargs) -> None:
    get_hub().publish(AgentsChanged(agent_ids=tuple(agent_ids), reason=reason))


def on_process_draining() -> None:
    hub = _hub
    if hub is not None:
        hub.end_streams_soon()


def connect_signals() -> None:
    set_live_notice(CommittingNotice())
    timeline_committed.connect(on_timeline_committed, dispatch_uid="chartr-live-committed")
    timeline_updated.connect(on_timeline_updated, dispatch_uid="chartr-live-updated")
    agents_changed.connect(on_agents_changed, dispatch_uid="chartr-live-agents")
    draining.on_draining(on_process_draining)
