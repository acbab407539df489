"""The per-process live hub: who is subscribed to which agent, and how news reaches them.

What travels is small: "agent X has committed rows up to seq N", "agents
X, Y changed", or a provisional item. Committed rows themselves are always
read from the database by the subscriber (``timeline.stream``), so a lost or
late notification delays a row and never loses it; a one-second poll of
``head_seq``/``version`` for the subscribed agents is the safety net.

Within a process the hub fans out in memory. Across processes a transport
carries the same messages:

* ``redis`` (when ``CHARTR_REDIS_URL`` is set): one pub/sub channel;
* ``postgres`` (on PostgreSQL without Redis): ``NOTIFY`` after commit and one
  ``LISTEN`` connection per process. A payload is limited to 8000 bytes, so a
  larger message (a big provisional item, an archive cascade over thousands of
  agents) is split into chunks sent in one transaction; PostgreSQL delivers a
  transaction's notifications together and in order, and the listener
  reassembles them. Nothing is stored;
* ``local``: nothing crosses processes. Committed rows still reach
  subscribers of other processes through the poll; provisional updates do not.

Every message carries the sending process's ``origin``; a process delivers its
own messages directly and ignores their echo from the transport.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, connections

from kernel.postgres import connection_keywords

logger = logging.getLogger("chartr.live")
T = TypeVar("T")

#: PostgreSQL refuses NOTIFY payloads of 8000 bytes or more.
PG_NOTIFY_LIMIT = 7999


# --- Messages ---------------------------------------------------------------


@dataclass(frozen=True)
class Committed:
    """Rows up to ``head_seq`` are committed for ``agent_id`` in ``epoch``."""

    agent_id: str
    head_seq: int
    epoch: str = ""


@dataclass(frozen=True)
class AgentsChanged:
    """The snapshots of ``agent_ids`` changed (created, updated, archived, ...)."""

    agent_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Provisional:
    agent_id: str
    item: dict
    item_id: str | None = None


@dataclass(frozen=True)
class Resync:
    """Not a transport message: tells one subscriber to re-read the database
    (its buffer overflowed, or the transport reconnected and may have missed news)."""

    agent_id: str = ""


Message = Committed | AgentsChanged | Provisional


def encode_message(message: Message, origin: str) -> str:
    """A compact ASCII JSON form (ASCII so that byte and character lengths agree when chunking)."""
    if isinstance(message, Committed):
        body: dict[str, Any] = {"k": "c", "a": message.agent_id, "s": message.head_seq, "e": message.epoch}
    elif isinstance(message, AgentsChanged):
        body = {"k": "a", "a": list(message.agent_ids), "r": message.reason}
    elif isinstance(message, Provisional):
        body = {"k": "p", "a": message.agent_id, "i": message.item, "d": message.item_id}
    else:  # pragma: no cover - programming error
        raise TypeError(f"Cannot send {message!r}")
    body["o"] = origin
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True)


def decode_message(payload: str | bytes) -> tuple[str, Message]:
    """``(origin, message)``; raises ValueError on anything malformed."""
    try:
        body = json.loads(payload)
        kind, origin = body["k"], str(body["o"])
        if kind == "c":
            return origin, Committed(agent_id=str(body["a"]), head_seq=int(body["s"]), epoch=str(body["e"]))
        if kind == "a":
            return origin, AgentsChanged(agent_ids=tuple(str(a) for a in body["a"]), reason=str(body["r"]))
        if kind == "p":
            if not isinstance(body["i"], dict):
                raise ValueError("provisional item is not an object")
            return origin, Provisional(agent_id=str(body["a"]), item=body["i"], item_id=body["d"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"malformed live message: {exc}") from exc
    raise ValueError(f"unknown live message kind {kind!r}")


def split_payload(payload: str, message_id: str, *, limit: int = PG_NOTIFY_LIMIT) -> list[str]:
    """``payload`` as one or more NOTIFY payloads of at most ``limit`` bytes.

    A whole message is sent as is (it starts with ``{``); chunks are
    ``#<message id>|<index>|<count>|<text>``.
    """
    if len(payload) <= limit:
        return [payload]
    header_room = len(f"#{message_id}|99999|99999|")
    step = limit - header_room
    parts = [payload[i : i + step] for i in range(0, len(payload), step)]
    return [f"#{message_id}|{index}|{len(parts)}|{part}" for index, part in enumerate(parts)]


class ChunkAssembler:
    """Puts chunked payloads back together; a partial message older than ``max_age`` is dropped."""

    def __init__(self, *, max_age: float = 30.0):
        self.max_age = max_age
        self._partial: dict[str, tuple[float, list[str | None]]] = {}

    def feed(self, payload: str) -> str | None:
        if not payload.startswith("#"):
            return payload
        try:
            message_id, index, count, text = payload[1:].split("|", 3)
            index, count = int(index), int(count)
        except ValueError:
            logger.warning("Dropping a malformed live chunk")
            return None
        now = time.monotonic()
        for stale in [k for k, (t, _) in self._partial.items() if now - t > self.max_age]:
            del self._partial[stale]
        started, parts = self._partial.setdefault(message_id, (now, [None] * count))
        if len(parts) != count or not 0 <= index < count:
            self._partial.pop(message_id, None)
            return None
        parts[index] = text
        if any(part is None for part in parts):
            return None
        del self._partial[message_id]
        return "".join(parts)  # type: ignore[arg-type]


# --- Database access from the event loop ---------------------------------------


class DatabaseRunner:
    """Runs blocking ORM calls for the live stream on a small dedicated pool.

    Each thread keeps its own connection between calls, so the number of
    database connections the streams use is bounded by the pool size, not by
    the number of open streams. A connection that broke (database restart) is
    closed and the call retried once.
    """

    def __init__(self, *, threads: int):
        self.threads = threads
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="chartr-live-db")

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: self._call(fn, args, kwargs))

    @staticmethod
    def _call(fn, args, kwargs):
        try:
            return fn(*args, **kwargs)
        except DatabaseError:
            connection = connections["default"]
            if connection.in_atomic_block:
                raise
            connection.close()
            return fn(*args, **kwargs)

    def shutdown(self) -> None:
        """Close every pool thread's connection (PostgreSQL will not drop a
        database that still has sessions), then stop the threads."""
        barrier = threading.Barrier(self.threads)

        def close_here() -> None:
            connections.close_all()
            try:
                # Holding each task until all have started puts one on every thread.
                barrier.wait(timeout=2)
            except threading.BrokenBarrierError:
                pass

        for _ in range(self.threads):
            self._executor.submit(close_here)
        self._executor.shutdown(wait=True)


# --- Subscribers ---------------------------------------------------------------


class Subscription:
    """One stream's buffer. Bounded: when it overflows, the buffered news is
    replaced by a single :class:`Resync`, so the stream goes back to the
    database instead of being dropped (provisional items in the dropped
    buffer are lost; they are ephemeral by definition)."""

    def __init__(self, hub: Hub, agent_id: str, *, capacity: int):
        self.hub = hub
        self.agent_id = agent_id
        self.capacity = capacity
        self.overflows = 0
        self._buffer: deque[tuple[int, Any]] = deque()
        self._ready = asyncio.Event()
        self.closed = False
        #: The channel's generation when this subscription joined.
        self.joined_generation = 0

    def put(self, generation: int, message: Any) -> None:
        if len(self._buffer) >= self.capacity:
            self._buffer.clear()
            self.overflows += 1
            message = Resync(self.agent_id)
        self._buffer.append((generation, message))
        self._ready.set()

    async def get(self, timeout: float | None) -> tuple[int, Any] | None:
        """The next ``(generation, message)``, or None after ``timeout`` seconds without one."""
        if not self._buffer:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return None
        return self._buffer.popleft()

    def pending(self) -> int:
        return len(self._buffer)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.hub._unsubscribe(self)


@dataclass
class LiveBatch:
    """What one database read saw: rows after a seq (pre-encoded SSE frames) and the agent's state.

    ``agent`` is None when the agent no longer exists.
    """

    rows: list[tuple[int, bytes]]
    agent: dict | None


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
        self.known: tuple[int, str, int] | None = None  # (head_seq, epoch, version) last seen
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

    async def read(self, hub: Hub, *, after_seq: int, min_generation: int, limit: int) -> LiveBatch:
        entry = self._reads.get(after_seq)
        if entry is not None and entry[0] >= min_generation:
            return await asyncio.shield(entry[1])
        # Reads started before the latest news cannot serve anyone who has seen it.
        for key in [k for k, (generation, _) in self._reads.items() if generation < self.generation]:
            del self._reads[key]
        future = asyncio.ensure_future(hub.db.run(hub.read_batch, self.agent_id, after_seq, limit))
        self._reads[after_seq] = (self.generation, future)
        self._forget_oldest_finished_reads()

        def forget_failure(done: asyncio.Future, key: int = after_seq) -> None:
            if (done.cancelled() or done.exception() is not None) and self._reads.get(key, (0, None))[1] is done:
                del self._reads[key]

        future.add_done_callback(forget_failure)
        return await asyncio.shield(future)


# --- The hub ---------------------------------------------------------------------


def default_channel_name() -> str:
    """The pub/sub channel, derived from the database so that deployments sharing
    one Redis (pub/sub ignores Redis database numbers) do not hear each other."""
    configured = getattr(settings, "CHARTR_LIVE_CHANNEL", "")
    if configured:
        return configured
    db = settings.DATABASES["default"]
    identity = "|".join(str(db.get(key, "")) for key in ("ENGINE", "NAME", "HOST", "PORT"))
    return "chartr_live_" + hashlib.sha256(identity.encode()).hexdigest()[:16]


def transport_name() -> str:
    wanted = getattr(settings, "CHARTR_LIVE_TRANSPORT", "auto")
    if wanted != "auto":
        return wanted
    if settings.CHARTR_REDIS_URL:
        return "redis"
    if connections["default"].vendor == "postgresql":
        return "postgres"
    return "local"


class Hub:
    def __init__(
        self,
        *,
        buffer_size: int | None = None,
        poll_interval: float | None = None,
        transport: str | None = None,
        db_threads: int | None = None,
    ):
        self.origin = uuid.uuid4().hex[:12]
        self.buffer_size = buffer_size or settings.CHARTR_SSE_BUFFER_SIZE
        self.poll_interval = poll_interval or settings.CHARTR_LIVE_POLL_SECONDS
        self.transport = transport or transport_name()
        self.channel_name = default_channel_name()
        self.db = DatabaseRunner(threads=db_threads or settings.CHARTR_LIVE_DB_THREADS)
        self.channels: dict[str, Channel] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task] = []
        self._message_ids = itertools.count(1)
        self._sync_redis = None
        self._redis_down_until = 0.0
        self._sync_lock = threading.Lock()
        #: Set once the transport listener is connected (tests wait on it).
        self.listening: asyncio.Event | None = None

    # -- lifecycle (event-loop side) --

    def _ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self.loop is loop and not loop.is_closed():
            return
        self.loop = loop
        self.listening = asyncio.Event()
        self._tasks = [loop.create_task(self._poll_forever(), name="chartr-live-poll")]
        if self.transport == "postgres":
            self._tasks.append(loop.create_task(self._listen_postgres(), name="chartr-live-listen"))
        elif self.transport == "redis":
            self._tasks.append(loop.create_task(self._listen_redis(), name="chartr-live-listen"))
        else:
            self.listening.set()

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []
        self.loop = None
        await asyncio.to_thread(self.db.shutdown)

    def subscribe(self, agent_id: str) -> Subscription:
        """Start buffering news for ``agent_id``. Call from the event loop."""
        self._ensure_started()
        channel = self.channels.get(agent_id)
        if channel is None:
            channel = self.channels[agent_id] = Channel(agent_id)
        subscription = Subscription(self, agent_id, capacity=self.buffer_size)
        subscription.joined_generation = channel.generation
        channel.subscribers.add(subscription)
        return subscription

    async def wait_listening(self, timeout: float) -> bool:
        """Wait (bounded) until the transport listener is connected; news sent by
        other processes before that is only caught up by the poll."""
        if self.listening is None:
            return False
        try:
            await asyncio.wait_for(self.listening.wait(), timeout)
            return True
        except TimeoutError:
            return False

    def _unsubscribe(self, subscription: Subscription) -> None:
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
            return await self.db.run(self.read_batch, subscription.agent_id, after_seq, settings.CHARTR_SSE_BATCH_SIZE)
        return await channel.read(
            self, after_seq=after_seq, min_generation=min_generation, limit=settings.CHARTR_SSE_BATCH_SIZE
        )

    # -- delivery (event-loop side) --

    def deliver(self, message: Any) -> None:
        """Hand ``message`` to the local subscribers it concerns. Never blocks."""
        if isinstance(message, Committed):
            channel = self.channels.get(message.agent_id)
            if channel is not None:
                if channel.known is not None and message.head_seq > channel.known[0]:
                    channel.known = (message.head_seq, message.epoch, channel.known[2])
                channel.dispatch(message)
        elif isinstance(message, AgentsChanged):
            if len(message.agent_ids) <= len(self.channels):
                targets = [self.channels.get(agent_id) for agent_id in message.agent_ids]
            else:
                wanted = set(message.agent_ids)
                targets = [c for agent_id, c in self.channels.items() if agent_id in wanted]
            for channel in targets:
                if channel is not None:
                    channel.dispatch(message)
        elif isinstance(message, (Provisional, Resync)):
            channel = self.channels.get(message.agent_id)
            if channel is not None:
                channel.dispatch(message)

    def resync_all(self) -> None:
        for channel in list(self.channels.values()):
            channel.dispatch(Resync(channel.agent_id))

    # -- publishing (any thread) --

    def publish(self, message: Message) -> None:
        """Deliver locally and send to the other processes. Never raises: the
        caller has usually just committed, and its client must get its answer."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.deliver, message)
            except RuntimeError:  # the loop closed in between
                pass
        try:
            if self.transport == "postgres":
                self._notify_postgres(message)
            elif self.transport == "redis":
                self._publish_redis(message)
        except Exception:
            logger.warning("Could not send live %s to other processes", type(message).__name__, exc_info=True)

    def _notify_postgres(self, message: Message) -> None:
        from django.db import transaction

        payload = encode_message(message, self.origin)
        chunks = split_payload(payload, f"{self.origin}.{next(self._message_ids)}")
        connection = connections["default"]
        # One transaction, so that PostgreSQL delivers all the chunks together.
        with transaction.atomic(), connection.cursor() as cursor:
            for chunk in chunks:
                cursor.execute("SELECT pg_notify(%s, %s)", [self.channel_name, chunk])

    def _publish_redis(self, message: Message) -> None:
        # While Redis is unreachable, skip it for a few seconds instead of making
        # every append wait for a connect timeout; the poll still delivers rows.
        if time.monotonic() < self._redis_down_until:
            return
        try:
            self._publish_redis_now(message)
        except Exception:
            self._redis_down_until = time.monotonic() + 5
            raise

    def _publish_redis_now(self, message: Message) -> None:
        with self._sync_lock:
            if self._sync_redis is None:
                import redis

                self._sync_redis = redis.Redis.from_url(
                    settings.CHARTR_REDIS_URL, socket_timeout=2, socket_connect_timeout=2
                )
        self._sync_redis.publish(self.channel_name, encode_message(message, self.origin))

    def receive_payload(self, payload: str | bytes) -> None:
        """Handle one message from the transport (event-loop side)."""
        try:
            origin, message = decode_message(payload)
        except ValueError:
            logger.warning("Dropping a malformed live message", exc_info=True)
            return
        if origin != self.origin:
            self.deliver(message)

    # -- database reads (run on DatabaseRunner threads) --

    @staticmethod
    def read_batch(agent_id: str, after_seq: int, limit: int) -> LiveBatch:
        from timeline.selectors import rows_after
        from timeline.stream import encode_committed_row

        rows = rows_after(agent_id=agent_id, after_seq=after_seq, limit=limit) if limit else []
        # The agent is read after the rows: if its epoch is still the one the
        # reader holds, the history was not replaced before the rows were read.
        agent = read_agent_state(agent_id)
        return LiveBatch(rows=[(row.seq, encode_committed_row(row)) for row in rows], agent=agent)

    @staticmethod
    def read_heads(agent_ids: list[str]) -> dict[str, tuple[int, str, int]]:
        from snapshots.models import AgentSnapshot

        heads: dict[str, tuple[int, str, int]] = {}
        for start in range(0, len(agent_ids), 500):  # bounded IN lists
            rows = AgentSnapshot.objects.filter(pk__in=agent_ids[start : start + 500]).values_list(
                "agent_id", "head_seq", "timeline_epoch", "version"
            )
            heads.update((agent_id, (head, epoch, version)) for agent_id, head, epoch, version in rows)
        return heads

    # -- background tasks --

    async def _poll_forever(self) -> None:
        """The safety net: notice commits and snapshot changes whose news never came."""
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                await self.poll_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("Live poll failed", exc_info=True)

    async def poll_once(self) -> None:
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

    async def _listen_postgres(self) -> None:
        import psycopg
        from psycopg import sql

        assembler = ChunkAssembler()
        backoff = 0.2
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(**postgres_connect_kwargs(), autocommit=True) as conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel_name)))
                    backoff = 0.2
                    # News may have been missed while not listening.
                    self.resync_all()
                    self.listening.set()
                    async for notify in conn.notifies():
                        payload = assembler.feed(notify.payload)
                        if payload is not None:
                            self.receive_payload(payload)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("Live LISTEN connection lost; reconnecting", exc_info=True)
            self.listening.clear()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    async def _listen_redis(self) -> None:
        import redis.asyncio as aioredis

        backoff = 0.2
        while True:
            client = aioredis.from_url(settings.CHARTR_REDIS_URL, socket_connect_timeout=2)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel_name)
                    backoff = 0.2
                    self.resync_all()
                    self.listening.set()
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=30)
                        if message is not None and message.get("type") == "message":
                            self.receive_payload(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("Live Redis subscription lost; reconnecting", exc_info=True)
            finally:
                try:
                    await client.aclose()
                except Exception:
                    pass
            self.listening.clear()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)


def read_agent_state(agent_id: str) -> dict | None:
    """The snapshot fields an ``agent`` event carries, or None if the agent is gone."""
    from snapshots.models import AgentSnapshot

    return (
        AgentSnapshot.objects.filter(pk=agent_id)
        .values(
            "agent_id",
            "lifecycle",
            "requires_attention",
            "attention_reason",
            "attention_at",
            "archived_at",
            "updated_at",
            "version",
            "head_seq",
            "timeline_epoch",
        )
        .first()
    )


def postgres_connect_kwargs() -> dict:
    kwargs: dict = {"connect_timeout": 5, **connection_keywords(settings.DATABASES["default"])}
    return kwargs


# --- The process-wide hub and the signal receivers ---------------------------------

_hub: Hub | None = None
_hub_lock = threading.Lock()


def get_hub() -> Hub:
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = Hub()
        return _hub


def set_hub(hub: Hub | None) -> Hub | None:
    """Replace the process-wide hub (tests); returns the previous one."""
    global _hub
    with _hub_lock:
        previous, _hub = _hub, hub
        return previous


def on_timeline_committed(sender, *, agent_id: str, head_seq: int, epoch: str, **kwargs) -> None:
    get_hub().publish(Committed(agent_id=agent_id, head_seq=head_seq, epoch=epoch))


def on_agents_changed(sender, *, agent_ids, reason: str, **kwargs) -> None:
    get_hub().publish(AgentsChanged(agent_ids=tuple(agent_ids), reason=reason))


def connect_signals() -> None:
    from snapshots.signals import agents_changed
    from timeline.signals import timeline_committed

    timeline_committed.connect(on_timeline_committed, dispatch_uid="chartr-live-committed")
    agents_changed.connect(on_agents_changed, dispatch_uid="chartr-live-agents")
