"""The hub: bounded subscriber buffers and database reads shared within a channel."""

from __future__ import annotations

import asyncio

import pytest

from tests.factories import AgentFactory
from tests.timeline.live.support import Reader, append, db, in_thread, run
from timeline.live.hub import Channel, Hub
from timeline.live.messages import Closing, Provisional, Resync
from timeline.live.stream import TimelineStream
from tokens.services import create_api_token, revoke_api_token


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


def test_a_wait_times_out_a_whole_timeout_after_it_began_even_after_news():
    async def scenario(hub: Hub):
        loop = asyncio.get_running_loop()
        subscription = hub.subscribe("a")
        first = asyncio.ensure_future(subscription.get(timeout=0.3))
        await asyncio.sleep(0.2)
        hub.deliver(Provisional("a", {"type": "x"}, "1"))
        assert (await first)[1].item_id == "1"
        # The timer armed by the first wait fires 0.1 s into this one, which must go on.
        began = loop.time()
        assert await subscription.get(timeout=0.3) is None
        assert loop.time() - began >= 0.29
        # A shorter timeout than the one a pending timer was armed for is honoured too.
        waiting = asyncio.ensure_future(subscription.get(timeout=30))
        await asyncio.sleep(0)
        hub.deliver(Provisional("a", {"type": "x"}, "2"))
        assert (await waiting)[1].item_id == "2"
        began = loop.time()
        assert await subscription.get(timeout=0.05) is None
        assert loop.time() - began < 5
        subscription.close()
        assert subscription._timer is None

    run(scenario)


@db
def test_the_poll_ends_the_streams_of_a_revoked_token_and_only_theirs():
    agent = AgentFactory()
    revoked, kept = create_api_token(name="revoked")[0], create_api_token(name="kept")[0]

    async def scenario(hub: Hub):
        ending = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None, token_id=revoked.pk))
        staying = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None, token_id=kept.pk))
        for reader in (ending, staying):
            assert (await reader.next())[0] == "agent"
        await hub.poll_once()
        assert hub.subscriber_count(agent.pk) == 2
        await in_thread(revoke_api_token, token=revoked)
        await hub.poll_once()
        with pytest.raises(StopAsyncIteration):
            await ending.next()
        assert hub.subscriber_count(agent.pk) == 1
        assert set(hub.by_token) == {kept.pk}
        await in_thread(append, agent.pk, "x")
        assert await staying.committed_seqs(1) == [1]
        await staying.close()
        assert hub.by_token == {}

    run(scenario)


def test_the_end_of_a_stream_survives_a_full_buffer():
    async def scenario(hub: Hub):
        subscription = hub.subscribe("a", token_id=7)
        for n in range(3):
            hub.deliver(Provisional("a", {"type": "x"}, str(n)))
        subscription.put(0, Closing("a"))
        kinds = []
        while subscription.pending():
            kinds.append(type((await subscription.get(timeout=1))[1]))
        assert kinds[-1] is Closing
        subscription.close()

    run(scenario, buffer_size=3)
