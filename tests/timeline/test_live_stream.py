"""The hub and the catch-up/live handover, in process, against the real database.

Each test runs its own event loop (``asyncio.run``) with a fresh hub; the
database work happens on the hub's threads, so these are transaction=True
tests.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from django.db import connections
from django.test import override_settings

from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent, delete_agent
from tests.factories import AgentFactory
from timeline import broker
from timeline.broker import (
    AgentsChanged,
    Channel,
    ChunkAssembler,
    Committed,
    Hub,
    Provisional,
    Resync,
    decode_message,
    encode_message,
    split_payload,
)
from timeline.live import publish_provisional
from timeline.services import NewTimelineItem, append_timeline_items
from timeline.stream import TimelineStream

db = pytest.mark.django_db(transaction=True)


def append(agent_id: str, *texts: str):
    return append_timeline_items(
        agent_id=agent_id, items=[NewTimelineItem(item={"type": "user_message", "text": t}) for t in texts]
    )


async def in_thread(fn, *args, **kwargs):
    """Run blocking ORM work on a worker thread, closing that thread's connection after
    (PostgreSQL will not drop the test database while a session is left open)."""

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    return await asyncio.to_thread(call)


def parse(frame: bytes) -> tuple[str, dict | None, str | None]:
    """(event, data, id) of one SSE frame; comments give ("comment", None, None)."""
    text = frame.decode()
    if text.startswith(":"):
        return "comment", None, None
    if text.startswith("retry:"):
        return "retry", None, None
    fields = dict(line.split(": ", 1) for line in text.strip().split("\n"))
    return fields["event"], json.loads(fields["data"]), fields.get("id")


class Reader:
    """Pulls parsed events from a stream generator, each with a time limit."""

    def __init__(self, stream: TimelineStream):
        self.events = stream.events()

    async def next(self, *, timeout: float = 5, skip_comments: bool = True):
        while True:
            event = parse(await asyncio.wait_for(self.events.__anext__(), timeout))
            if event[0] == "retry" or (skip_comments and event[0] == "comment"):
                continue
            return event

    async def committed_seqs(self, count: int) -> list[int]:
        seqs = []
        while len(seqs) < count:
            kind, data, event_id = await self.next()
            if kind == "committed":
                assert event_id == str(data["seq"])
                seqs.append(data["seq"])
        return seqs

    async def nothing_but_keepalive(self) -> None:
        kind, _, _ = await self.next(skip_comments=False)
        assert kind == "comment"

    async def close(self):
        await self.events.aclose()


def run(coro_fn, **hub_kwargs):
    """Run ``coro_fn(hub)`` on a fresh hub that is also the process-wide one (so signals reach it)."""

    async def main():
        hub = Hub(transport=hub_kwargs.pop("transport", "local"), **hub_kwargs)
        previous = broker.set_hub(hub)
        try:
            return await asyncio.wait_for(coro_fn(hub), 30)
        finally:
            broker.set_hub(previous)
            await hub.aclose()

    return asyncio.run(main())


# --- Messages and chunks --------------------------------------------------------


def test_messages_survive_encoding():
    for message in (
        Committed("a-1", 7, "e1"),
        AgentsChanged(("a-1", "a-2"), "archived"),
        Provisional("a-1", {"type": "assistant_message", "text": "hé\n"}, "k"),
    ):
        assert decode_message(encode_message(message, "origin1")) == ("origin1", message)
    for bad in ("", "{}", '{"k": "z", "o": "x"}', '{"k": "p", "o": "x", "a": "a", "i": [1], "d": null}'):
        with pytest.raises(ValueError):
            decode_message(bad)


def test_large_payloads_are_chunked_under_the_notify_limit_and_reassembled():
    big = encode_message(Provisional("a", {"type": "x", "text": "é" * 20_000}), "o")
    small = encode_message(Committed("a", 1, "e"), "o")
    chunks = split_payload(big, "o.1")
    assert len(chunks) > 1
    assert all(len(chunk.encode()) <= broker.PG_NOTIFY_LIMIT for chunk in chunks)
    assert split_payload(small, "o.2") == [small]

    assembler = ChunkAssembler()
    other = split_payload(big.replace("é", "e"), "o.3")
    # Interleaved with another chunked message and a whole one; out of order within a message.
    results = [assembler.feed(p) for p in [chunks[1], other[0], small, chunks[0], *other[1:], *chunks[2:]]]
    completed = [r for r in results if r is not None]
    assert completed == [small, big.replace("é", "e"), big]
    assert assembler.feed("#broken") is None


def test_a_full_buffer_turns_into_one_resync():
    async def scenario(hub: Hub):
        subscription = hub.subscribe("a")
        for n in range(5):
            hub.deliver(Provisional("a", {"type": "x"}, str(n)))
        assert subscription.overflows >= 1
        assert subscription.pending() <= 3
        kinds = []
        while subscription.pending():
            kinds.append(type((await subscription.get(timeout=1))[1]))
        assert Resync in kinds
        subscription.close()
        assert hub.subscriber_count() == 0

    run(scenario, buffer_size=3)


# --- Catch-up and live ----------------------------------------------------------------


@db
def test_catch_up_then_live_without_gap_or_duplicate():
    agent = AgentFactory()
    append(agent.pk, "a", "b", "c")

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=1, epoch=None))
        kind, data, _ = await reader.next()
        assert kind == "agent" and data["reason"] == "snapshot" and data["head_seq"] == 3
        assert await reader.committed_seqs(2) == [2, 3]
        await in_thread(append, agent.pk, "d", "e")
        assert await reader.committed_seqs(2) == [4, 5]
        await reader.close()
        assert hub.subscriber_count() == 0

    run(scenario)


@db
def test_without_a_cursor_only_new_rows_come():
    agent = AgentFactory()
    append(agent.pk, "old")

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=None, epoch=None))
        kind, _, event_id = await reader.next()
        # The opening event carries the head as its id, so a reconnect before any
        # row arrives resumes from here (Last-Event-ID) rather than a later head.
        assert (kind, event_id) == ("agent", "1")
        await in_thread(append, agent.pk, "new")
        kind, data, _ = await reader.next()
        assert (kind, data["seq"], data["item"]["text"]) == ("committed", 2, "new")
        await reader.close()

    run(scenario)


@db
@override_settings(CHARTR_SSE_KEEPALIVE_SECONDS=0.2)
def test_gap_is_filled_from_the_database_and_stale_news_is_dropped():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        # Rows committed while this hub heard nothing (as if their news was lost)...
        broker.set_hub(Hub(transport="local"))
        await in_thread(append, agent.pk, "1", "2", "3")
        # ...then news of seq 3 alone: the stream reads 1..3 from the database.
        hub.deliver(Committed(agent.pk, 3, agent.timeline_epoch))
        assert await reader.committed_seqs(3) == [1, 2, 3]
        # News at or below the last seq sent is dropped: only a keep-alive follows.
        hub.deliver(Committed(agent.pk, 2, agent.timeline_epoch))
        hub.deliver(Committed(agent.pk, 3, agent.timeline_epoch))
        await reader.nothing_but_keepalive()
        await reader.close()

    run(scenario)


@db
def test_a_lost_notification_only_delays_the_row_until_the_poll():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        broker.set_hub(Hub(transport="local"))  # the commit's news goes nowhere
        await in_thread(append, agent.pk, "quiet")
        assert await reader.committed_seqs(1) == [1]
        await reader.close()

    run(scenario, poll_interval=0.2)


@db
def test_a_slow_subscriber_overflows_back_to_catch_up_and_does_not_hold_up_others():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        slow = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        fast = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await slow.next())[0] == "agent"
        assert (await fast.next())[0] == "agent"
        for n in range(10):
            await in_thread(append, agent.pk, f"r{n}")
            hub.deliver(Provisional(agent.pk, {"type": "assistant_message", "text": "..."}, None))
        # The fast one reads everything while the slow one reads nothing.
        seen = []
        while len(seen) < 10:
            kind, data, _ = await fast.next()
            if kind == "committed":
                seen.append(data["seq"])
        assert seen == list(range(1, 11))
        slow_subscription = next(s for s in hub.channels[agent.pk].subscribers if s.overflows)
        assert slow_subscription.pending() <= 4
        # The slow one went back to the database: still every row, once, in order.
        assert await slow.committed_seqs(10) == list(range(1, 11))
        await slow.close()
        await fast.close()

    run(scenario, buffer_size=4)


@db
def test_epoch_change_sends_reset():
    agent = AgentFactory()
    append(agent.pk, "a", "b")

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=1, epoch="not-the-epoch"))
        kind, data, _ = await reader.next()
        assert (kind, data["reason"], data["epoch"], data["head_seq"]) == ("reset", "epoch", agent.timeline_epoch, 2)
        assert (await reader.next())[0] == "agent"
        # The history is replaced while streaming (as a restore would do).
        await in_thread(lambda: AgentSnapshot.objects.filter(pk=agent.pk).update(timeline_epoch="replaced"))
        hub.deliver(Committed(agent.pk, 2, "replaced"))
        kind, data, _ = await reader.next()
        assert (kind, data["epoch"]) == ("reset", "replaced")
        await reader.close()

    run(scenario)


@db
def test_cursor_beyond_the_head_is_reset():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=50, epoch=None))
        kind, data, event_id = await reader.next()
        assert (kind, data["reason"], data["head_seq"], event_id) == ("reset", "cursor_ahead", 0, "0")
        await in_thread(append, agent.pk, "first")
        assert await reader.committed_seqs(1) == [1]
        await reader.close()

    run(scenario)


@db
def test_archive_and_delete_send_agent_events():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        kind, data, _ = await reader.next()
        assert data["archived_at"] is None
        await in_thread(archive_agent, agent=agent)
        kind, data, _ = await reader.next()
        assert (kind, data["reason"], data["lifecycle"]) == ("agent", "archived", "closed")
        assert data["archived_at"] is not None
        await in_thread(delete_agent, agent=agent)
        hub.deliver(AgentsChanged((agent.pk,), "deleted"))
        kind, data, _ = await reader.next()
        assert (kind, data) == ("agent", {"agent_id": agent.pk, "reason": "deleted", "deleted": True})
        with pytest.raises(StopAsyncIteration):
            await reader.next()
        assert hub.subscriber_count() == 0

    run(scenario)


@db
def test_provisional_reaches_current_subscribers_only_and_is_not_stored():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        item = {"type": "assistant_message", "text": "partial"}
        await in_thread(publish_provisional, agent_id=agent.pk, item=item, item_id="m1")
        kind, data, event_id = await reader.next()
        assert (kind, data, event_id) == ("provisional", {"item": item, "item_id": "m1"}, None)
        await reader.close()

    run(scenario)
    agent.refresh_from_db()
    assert agent.head_seq == 0 and not agent.timeline_rows.exists()


@db
def test_many_subscribers_share_one_database_read_per_append():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reads = 0
        original = hub.read_batch

        def counting(*args):
            nonlocal reads
            reads += 1
            return original(*args)

        hub.read_batch = counting
        readers = [Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None)) for _ in range(20)]
        for reader in readers:
            assert (await reader.next())[0] == "agent"
        reads = 0
        await in_thread(append, agent.pk, "x")
        for reader in readers:
            assert await reader.committed_seqs(1) == [1]
        assert reads <= 3, reads
        for reader in readers:
            await reader.close()

    run(scenario)


@override_settings(CHARTR_REDIS_URL="redis://127.0.0.1:1/0")
def test_an_unreachable_transport_never_fails_or_stalls_the_publisher():
    import time

    hub = Hub(transport="redis")
    started = time.monotonic()
    hub.publish(Committed("a", 1, "e"))  # refused connection: logged, not raised
    first = time.monotonic() - started
    started = time.monotonic()
    for _ in range(20):
        hub.publish(Committed("a", 1, "e"))
    assert time.monotonic() - started < 0.5, "later publishes skip the dead transport for a while"
    assert first < 5
    hub.db.shutdown()


@db
def test_finished_shared_reads_are_bounded_per_channel():
    agent = AgentFactory()
    append(agent.pk, *[str(n) for n in range(60)])

    async def scenario(hub: Hub):
        channel = Channel(agent.pk)
        for after_seq in range(50):  # 50 reconnects at 50 different cursors, no news in between
            batch = await channel.read(hub, after_seq=after_seq, min_generation=0, limit=10)
            assert batch.rows[0][0] == after_seq + 1
        assert len(channel._reads) == Channel.MAX_KEPT_READS
        assert min(channel._reads) == 50 - Channel.MAX_KEPT_READS  # the oldest went first

    run(scenario)
