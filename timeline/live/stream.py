"""The SSE event stream of one agent's timeline: catch-up from the database, then live.

The handover has no gap and no duplicate because the stream

1. subscribes to the hub first, so news arriving from then on is buffered;
2. reads the committed rows after its cursor from the database and sends them;
3. drains the buffer: committed news at or below the last seq sent is dropped,
   news above it makes the stream read from the database again from its
   cursor, which also fills any gap;
4. on overflow (a slow client) or a transport reconnect, goes back to step 2.

When the process starts draining (SIGTERM) the stream sends what it has
already been told about and ends; its client reconnects with ``Last-Event-ID``.

Rows are only ever sent from a database read, in seq order, and only when
their seq is exactly ``last + 1``. Notifications only say when to read.

A stream opened with ``updates=1`` also sends row updates (docs/timeline.md,
"Updates"): after the rows of each read, the updates numbered above the last one
it sent, each to a row the client holds and newer than the content it holds
(a row sent in the same connection may already carry it). Its event ids are
``seq:update_seq``, both cursors, so ``Last-Event-ID`` resumes both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from django.conf import settings

from timeline.live.hub import Hub, Subscription
from timeline.live.messages import AgentsChanged, Closing, Committed, Provisional, Resync, Updated
from timeline.live.reads import LiveBatch, read_agent_state, read_updates
from timeline.live.sse import KEEPALIVE, agent_event, sse_frame

#: Why a ``reset`` event is sent: the cursor's epoch is not the agent's, the cursor is beyond the
#: head, or the rows right after it are no longer retained. The schema's ``ResetEvent`` lists these.
RESET_EPOCH, RESET_CURSOR_AHEAD, RESET_GAP = "epoch", "cursor_ahead", "gap"
RESET_REASONS = (RESET_EPOCH, RESET_CURSOR_AHEAD, RESET_GAP)


class TimelineStream:
    """State of one client's stream: the last seq sent, the epoch and agent snapshot version it has seen."""

    def __init__(
        self,
        hub: Hub,
        agent_id: str,
        *,
        after_seq: int | None,
        epoch: str | None,
        on_close: Callable[[], None] | None = None,
        updates: bool = False,
        after_update: int | None = None,
        token_id: int | None = None,
    ):
        self.hub = hub
        #: The API token that opened the stream (itself or through a ticket): revoked, the stream ends.
        self.token_id = token_id
        #: Called once the stream ends (its slot, timeline/live/slots.py).
        self.on_close = on_close
        self.agent_id = agent_id
        self.requested_after = after_seq
        self.client_epoch = epoch
        self.last_seq = 0
        self.epoch: str | None = None
        self.version: int | None = None
        self.generation = 0
        self.ended = False
        #: ``updates=1``: row updates are sent, and ids carry the last one sent (``last_update``).
        self.updates = updates
        self.requested_after_update = after_update
        self.last_update = 0
        #: ``seq -> update_seq`` of rows sent with content an update wrote after ``last_update``.
        self.fresh: dict[int, int] = {}
        #: Without a cursor: the agent's state when the stream was opened (its head is the cursor).
        self.opened: dict | None = None

    async def events(self) -> AsyncIterator[bytes]:
        subscription = self.hub.subscribe(self.agent_id, token_id=self.token_id)
        self.generation = subscription.joined_generation
        try:
            if self.requested_after is None:
                # "From now on" is from the request, not from whenever the listener answers below:
                # a row committed while the stream waits for it is sent, transport up or down.
                self.opened = await self.hub.db.run(read_agent_state, self.agent_id)
            # A fresh process connects its LISTEN/SUBSCRIBE on the first stream;
            # the stream reports ready (its first event) once it can hear the others.
            # Down (Redis unreachable), the poll delivers and the stream goes on after 3 s.
            await self.hub.wait_listening(timeout=3)
            # The reconnect delay rides on the first event: sent alone, its
            # blank line is an empty message event to some SSE clients.
            retry = f"retry: {settings.CHARTR_SSE_RETRY_MS}\n".encode()
            async for frame in self._start(subscription):
                yield retry + frame
                retry = b""
            keepalive = settings.CHARTR_SSE_KEEPALIVE_SECONDS
            while not self.ended:
                news = await subscription.get(timeout=keepalive)
                if news is None:
                    yield KEEPALIVE
                    continue
                generation, message = news
                self.generation = max(self.generation, generation)
                if isinstance(message, Closing):
                    return
                if isinstance(message, Provisional):
                    yield sse_frame("provisional", {"item": message.item, "item_id": message.item_id})
                    continue
                reason = self._reason_to_read(message)
                # The rounds inline, not through _catch_up: an async generator per
                # subscriber per event was a good part of the fan-out's cost.
                caught_up = reason is None
                while not caught_up:
                    frames, caught_up = await self._catch_up_once(subscription, reason=reason)
                    for frame in frames:
                        yield frame
        finally:
            subscription.close()
            if self.on_close is not None:
                self.on_close()

    async def _read(self, subscription: Subscription) -> LiveBatch:
        return await self.hub.read(subscription, after_seq=self.last_seq, min_generation=self.generation)

    async def _start(self, subscription: Subscription) -> AsyncIterator[bytes]:
        after, asked_update = self.requested_after, self.requested_after_update
        opened = self.opened
        if after is None and opened is not None:
            # No cursor: the head as the stream was opened is the cursor.
            after, asked_update = opened["head_seq"], opened["update_seq"]
        self.last_seq = after if after is not None else 0
        batch = (
            await self._read(subscription)
            if after is not None
            else await self.hub.db.run(self.hub.read_batch, self.agent_id, 0, 0)
        )
        state = batch.agent
        if state is None:
            yield self._gone()
            return
        self.epoch = state["timeline_epoch"]
        head = state["head_seq"]
        stale_epoch = self.client_epoch is not None and self.client_epoch != self.epoch
        if (
            opened is not None
            and self.requested_after is None
            and (stale_epoch or opened["timeline_epoch"] != self.epoch or after > head)
        ):
            # The history was replaced (or a backfill begun) as the stream opened: from the head, as ever.
            after = None
        resumes = after is not None and not stale_epoch and after <= head
        self.last_update = asked_update if resumes and asked_update is not None else state["update_seq"]
        self.last_update = min(self.last_update, state["update_seq"])
        if after is None or stale_epoch or after > head:
            # No cursor: only new events. A cursor from another history (or
            # beyond this one) cannot be resumed: say so, and go on from the head.
            self.last_seq = head
            if after is not None:
                yield self._reset(state, RESET_EPOCH if stale_epoch else RESET_CURSOR_AHEAD)
            batch = LiveBatch(rows=[], agent=state)
        elif self._gap(batch):
            # The batch read "seq > after", so it starts at min_seq as the stream now does.
            yield self._reset(state, RESET_GAP)
        self.version = state["version"]
        # The opening event carries the cursor too (`id:`), so a client that
        # connected without one and drops before any row arrives resumes from
        # here on reconnect instead of from a later head, which would skip rows.
        yield agent_event(state, "snapshot", event_id=self.event_id())
        for frame in self._send_rows(batch):
            yield frame
        if self.last_seq < head:
            async for frame in self._catch_up(subscription, reason="snapshot"):
                yield frame
        elif self.updates:
            for frame in await self._send_updates(state):
                yield frame

    def _reason_to_read(self, message) -> str | None:
        """Why ``message`` sends the stream back to the database (the ``agent`` event's reason), or None."""
        if isinstance(message, Committed):
            # A head below the cursor in the same epoch: a backfill dropped the rows (timeline.writes.history).
            if message.head_seq != self.last_seq or (message.epoch and message.epoch != self.epoch):
                return "updated"
            return None
        if isinstance(message, AgentsChanged):
            return message.reason
        if isinstance(message, Resync):
            return "changed"
        if isinstance(message, Updated) and self.updates and message.update_seq > self.last_update:
            return "updated"
        return None

    async def _catch_up(self, subscription: Subscription, *, reason: str) -> AsyncIterator[bytes]:
        """Read from the database until the stream has every row up to the head it saw."""
        caught_up = False
        while not caught_up:
            frames, caught_up = await self._catch_up_once(subscription, reason=reason)
            for frame in frames:
                yield frame

    async def _catch_up_once(self, subscription: Subscription, *, reason: str) -> tuple[list[bytes], bool]:
        """One read towards the head: the frames it gives, and whether the stream has caught up."""
        batch = await self._read(subscription)
        state = batch.agent
        if state is None:
            return [self._gone()], True
        if state["timeline_epoch"] != self.epoch:
            # The history was replaced: these rows are not a continuation.
            self.epoch = state["timeline_epoch"]
            self.last_seq = state["head_seq"]
            self.last_update, self.fresh = state["update_seq"], {}
            self.version = state["version"]
            return [self._reset(state, RESET_EPOCH)], True
        if state["head_seq"] < self.last_seq and not batch.rows:
            # The rows the stream sent are gone in this epoch (a backfill begun): go on from the head.
            self.last_seq = state["head_seq"]
            self.version = state["version"]
            return [self._reset(state, RESET_CURSOR_AHEAD)], True
        frames = [self._reset(state, RESET_GAP)] if self._gap(batch) else []
        before = self.last_seq
        frames.extend(self._send_rows(batch))
        if state["version"] != self.version:
            self.version = state["version"]
            frames.append(agent_event(state, reason))
        caught_up = self.last_seq == before or self.last_seq >= state["head_seq"]
        if caught_up and self.updates:
            frames.extend(await self._send_updates(state))
        return frames, caught_up

    def event_id(self) -> int | str:
        """The cursor an event's ``id:`` gives: the seq, and with ``updates=1`` the last update too."""
        return f"{self.last_seq}:{self.last_update}" if self.updates else self.last_seq

    async def _send_updates(self, state: dict) -> list[bytes]:
        """The ``updated`` events the client is owed, up to the agent's update count in ``state``."""
        frames: list[bytes] = []
        while self.last_update < state["update_seq"]:
            found = await self.hub.db.run(read_updates, self.agent_id, self.last_update, self.hub.batch_size)
            if not found:
                break
            for update in found:
                self.last_update = update.update_seq
                # A row the client does not hold yet comes with this content when it is sent; a row
                # sent in this connection may carry it already.
                if update.seq <= self.last_seq and self.fresh.get(update.seq, 0) < update.update_seq:
                    frames.append(sse_frame("updated", update.data, event_id=self.event_id()))
        self.fresh = {seq: at for seq, at in self.fresh.items() if at > self.last_update}
        return frames

    def _send_rows(self, batch: LiveBatch):
        holes = batch.agent is not None and batch.retained.has_holes
        for seq, frame in batch.rows:
            if seq != self.last_seq + 1 and not (holes and seq > self.last_seq):
                # Reads are "seq > last" in order and seqs are contiguous but for an imported
                # history's holes, so this only happens if the history changed under us; the
                # next read decides.
                break
            self.last_seq = seq
            if self.updates:
                written = batch.row_updates.get(seq)
                if written is not None and written > self.last_update:
                    self.fresh[seq] = written
                frame = b"id: %s\n%s" % (self.event_id().encode(), frame.split(b"\n", 1)[1])
            yield frame

    def _gap(self, batch: LiveBatch) -> bool:
        """Whether the rows right after the cursor are no longer retained; if
        so the stream moves on to the first retained row (after a ``reset``)."""
        retained = batch.retained
        if not retained.gap_after(self.last_seq):
            return False
        self.last_seq = retained.min_seq - 1
        return True

    def _reset(self, state: dict, reason: str) -> bytes:
        # `id:` moves the browser's Last-Event-ID to where the stream goes on
        # from: the new history's head, or just before min_seq after a gap.
        return sse_frame(
            "reset",
            {
                "reason": reason,
                "epoch": state["timeline_epoch"],
                "head_seq": state["head_seq"],
                "min_seq": state["min_seq"],
            },
            event_id=self.event_id(),
        )

    def _gone(self) -> bytes:
        self.ended = True
        return sse_frame("agent", {"agent_id": self.agent_id, "reason": "deleted", "deleted": True})
