"""The catch-up/live handover of one stream, in process, against the real database."""

from __future__ import annotations

import pytest
from django.test import override_settings

from snapshots.services import archive_agent, delete_agent
from tests.factories import AgentFactory
from tests.timeline.histories import carry_over_history
from tests.timeline.live.support import Reader, append, db, in_thread, run
from timeline.live import hub as live_hub
from timeline.live.hub import Hub
from timeline.live.messages import AgentsChanged, Committed, Provisional
from timeline.live.stream import TimelineStream
from timeline.models import TimelineHead


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
    epoch = agent.timeline_head.epoch

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        # Rows committed while this hub heard nothing (as if their news was lost)...
        live_hub.set_hub(Hub(transport="local"))
        await in_thread(append, agent.pk, "1", "2", "3")
        # ...then news of seq 3 alone: the stream reads 1..3 from the database.
        hub.deliver(Committed(agent.pk, 3, epoch))
        assert await reader.committed_seqs(3) == [1, 2, 3]
        # News at or below the last seq sent is dropped: only a keep-alive follows.
        hub.deliver(Committed(agent.pk, 2, epoch))
        hub.deliver(Committed(agent.pk, 3, epoch))
        await reader.nothing_but_keepalive()
        await reader.close()

    run(scenario)


@db
def test_a_lost_notification_only_delays_the_row_until_the_poll():
    agent = AgentFactory()

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        live_hub.set_hub(Hub(transport="local"))  # the commit's news goes nowhere
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
    epoch = agent.timeline_head.epoch
    append(agent.pk, "a", "b")

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=1, epoch="not-the-epoch"))
        kind, data, _ = await reader.next()
        assert (kind, data["reason"], data["epoch"], data["head_seq"]) == (
            "reset",
            "epoch",
            epoch,
            2,
        )
        assert (await reader.next())[0] == "agent"
        # The history is replaced while streaming (as a restore would do).
        await in_thread(lambda: TimelineHead.objects.filter(pk=agent.pk).update(epoch="replaced"))
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
def test_the_reconnect_delay_rides_on_the_first_event_not_an_empty_one():
    agent = AgentFactory()
    append(agent.pk, "a")

    async def scenario(hub: Hub):
        events = TimelineStream(hub, agent.pk, after_seq=None, epoch=None).events()
        first = await events.__anext__()
        await events.aclose()
        lines = first.decode().split("\n")
        assert lines[0] == "retry: 1000"
        assert "event: agent" in lines and lines[-2:] == ["", ""]
        assert first.count(b"\n\n") == 1, first

    run(scenario)


@db
def test_a_cursor_below_the_retained_rows_is_reset_with_reason_gap():
    agent = AgentFactory()
    carry_over_history(agent.pk, start_seq=11, count=3)

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=4, epoch="paseo-epoch"))
        kind, data, event_id = await reader.next()
        assert (kind, data["reason"], data["min_seq"], data["head_seq"], event_id) == ("reset", "gap", 11, 13, "10")
        assert (await reader.next())[0] == "agent"
        # The stream goes on from the first retained row.
        assert await reader.committed_seqs(3) == [11, 12, 13]
        await reader.close()

    run(scenario)


@db
def test_a_cursor_right_before_the_retained_rows_resumes_without_reset():
    agent = AgentFactory()
    carry_over_history(agent.pk, start_seq=11, count=3)

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=11, epoch="paseo-epoch"))
        kind, data, event_id = await reader.next()
        assert (kind, data["reason"], event_id) == ("agent", "snapshot", "11")
        assert await reader.committed_seqs(2) == [12, 13]
        await reader.close()

    run(scenario)


@db
def test_draining_ends_open_streams_after_what_they_were_told_and_new_ones_after_catching_up():
    from kernel import draining

    agent = AgentFactory()
    append(agent.pk, "a")

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        assert await reader.committed_seqs(1) == [1]
        await in_thread(append, agent.pk, "b")
        draining.start_draining()  # what the worker does on SIGTERM
        # News that came before the end is still sent, then the stream finishes.
        assert await reader.committed_seqs(1) == [2]
        with pytest.raises(StopAsyncIteration):
            await reader.next()
        assert hub.subscriber_count() == 0
        # A stream that subscribes while draining catches up, then ends too.
        late = Reader(TimelineStream(hub, agent.pk, after_seq=1, epoch=None))
        assert (await late.next())[0] == "agent"
        assert await late.committed_seqs(1) == [2]
        with pytest.raises(StopAsyncIteration):
            await late.next()

    try:
        run(scenario)
    finally:
        draining.reset()


@db
def test_a_backfill_begun_under_a_reader_resets_it_and_the_replay_streams_from_1():
    from timeline.writes.history import begin_backfill, delete_history

    agent = AgentFactory()
    append(agent.pk, "a", "b")

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=0, epoch=None))
        assert (await reader.next())[0] == "agent"
        assert await reader.committed_seqs(2) == [1, 2]
        await in_thread(lambda: begin_backfill(agent_id=agent.pk))
        kind, data, event_id = await reader.next()
        assert (kind, data["reason"], data["head_seq"], event_id) == ("reset", "cursor_ahead", 0, "0")
        await in_thread(append, agent.pk, "replayed")
        assert await reader.committed_seqs(1) == [1]
        await in_thread(lambda: delete_history(agent_id=agent.pk))
        kind, data, _ = await reader.next()
        assert (kind, data["reason"], data["head_seq"]) == ("reset", "epoch", 0)
        await reader.close()

    run(scenario)


@db
def test_the_reset_reasons_the_stream_sends_are_exactly_the_schemas():
    from timeline.live.openapi import stream_event_components
    from timeline.live.stream import RESET_REASONS

    schema = stream_event_components()["ResetEvent"]["properties"]["data"]["contentSchema"]
    appended, carried = AgentFactory(), AgentFactory()
    append(appended.pk, "a", "b")
    carry_over_history(carried.pk, start_seq=11, count=3)
    cursors = [(appended.pk, 1, "not-the-epoch"), (appended.pk, 50, None), (carried.pk, 4, "paseo-epoch")]
    sent = []

    async def scenario(hub: Hub):
        for agent_id, after_seq, epoch in cursors:
            reader = Reader(TimelineStream(hub, agent_id, after_seq=after_seq, epoch=epoch))
            kind, data, _ = await reader.next()
            assert kind == "reset" and set(data) == set(schema["required"]) == set(schema["properties"])
            sent.append(data["reason"])
            await reader.close()

    run(scenario)
    assert sent == schema["properties"]["reason"]["enum"] == list(RESET_REASONS)
