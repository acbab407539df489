"""``follow()`` against a live server: typed events, reconnects across a restart and across dropped
connections with every seq exactly once, ``reset``, and the async iterator."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from chartr_client import (
    AgentEvent,
    AsyncClient,
    Committed,
    NewItem,
    Provisional,
    Reset,
    errors,
)

from tests.clients.python.conftest import PATIENT, RECONNECT


def say(text: str, item_id: str | None = None) -> NewItem:
    return NewItem({"type": "user_message", "text": text}, item_id)


class Collector:
    """Follows an agent in a thread, keeping every committed seq and every snapshot it gets."""

    def __init__(self, follow):
        self.follow = follow
        self.seqs: list[int] = []
        self.snapshots = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for event in self.follow:
                if isinstance(event, Committed):
                    self.seqs.append(event.row.seq)
                elif isinstance(event, AgentEvent) and event.reason == "snapshot":
                    self.snapshots += 1
        except BaseException as exc:  # reported by wait_for
            self.error = exc

    def wait_for(self, condition, what: str, timeout: float = 90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.error is None, self.error
            if condition():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}: seqs={self.seqs}")


def test_follow_hands_back_typed_events(client, workspace):
    agent = client.create_agent(workspace.id, "claude", agent_id="typed")
    with client.follow("typed", after_seq=0) as events:
        snapshot = next(events)
        assert isinstance(snapshot, AgentEvent) and snapshot.reason == "snapshot"
        assert snapshot.epoch == agent.timeline_epoch and snapshot.head_seq == 0 and events.cursor == 0

        client.append("typed", [say("one", "m1"), say("two")])
        first, second = next(events), next(events)
        assert isinstance(first, Committed) and (first.row.seq, first.row.item_id) == (1, "m1")
        assert first.row.item == {"type": "user_message", "text": "one"} and first.row.committed_at.tzinfo
        assert isinstance(second, Committed) and second.row.seq == 2 and events.cursor == 2

        client.publish_provisional("typed", {"type": "assistant_message", "text": "thinking"}, item_id="m3")
        update = next(events)
        assert update == Provisional({"type": "assistant_message", "text": "thinking"}, "m3")

        client.update_agent("typed", {"title": "renamed"})
        changed = next(events)
        assert isinstance(changed, AgentEvent) and changed.reason == "updated" and changed.version > agent.version

        client.archive_agent("typed")
        archived = next(events)
        assert isinstance(archived, AgentEvent) and archived.archived_at is not None
        assert events.state.connections == 1


def test_follow_across_a_server_restart_has_no_gap_and_no_duplicate(live, client, workspace):
    client.create_agent(workspace.id, "claude", agent_id="restart")
    client.append("restart", [say("before the stream")])
    collector = Collector(client.follow("restart", after_seq=0))
    for n in range(2, 6):
        client.append("restart", [say(f"row {n}")])
    collector.wait_for(lambda: collector.seqs == [1, 2, 3, 4, 5], "the rows before the restart")

    live.server.stop()
    live.server.start()
    for n in range(6, 11):
        client.append("restart", [say(f"row {n}")])  # some may commit before the follower is back
    collector.wait_for(lambda: len(collector.seqs) >= 10 and collector.snapshots >= 2, "the rows after it")
    time.sleep(0.5)
    assert collector.seqs == list(range(1, 11))
    assert collector.follow.state.connections >= 2
    collector.follow.close()


def test_follow_through_dropped_connections_has_no_gap_and_no_duplicate(live, client, workspace, proxy):
    client.create_agent(workspace.id, "claude", agent_id="drops")
    with live.client(base_url=proxy.base_url) as through:
        collector = Collector(through.follow("drops"))
        collector.wait_for(lambda: collector.snapshots == 1, "the stream to open")
        written = threading.Thread(
            target=lambda: [client.append("drops", [say(f"row {n}")]) or time.sleep(0.02) for n in range(1, 41)]
        )
        written.start()
        drops = 0
        while written.is_alive() or drops < 3:  # at least three drops, however fast the writer is
            time.sleep(0.3)
            proxy.drop_all()
            drops += 1
        written.join()
        collector.wait_for(lambda: len(collector.seqs) >= 40, "all 40 rows")
        time.sleep(0.5)
        assert collector.seqs == list(range(1, 41))
        # A drop can land before the proxy has the next connection: at least one reconnect happened.
        assert collector.follow.state.connections >= 2
        # A drop can land before the proxy has read a request, so it may have seen fewer.
        assert 3 <= proxy.seen(b"GET /api/v1/agents/drops/timeline/stream") <= collector.follow.state.connections
        collector.follow.close()


def test_follow_hands_back_reset_and_goes_on_in_the_agents_history(client, workspace):
    agent = client.create_agent(workspace.id, "claude", agent_id="resets")
    client.append("resets", [say("a"), say("b"), say("c")])
    with client.follow("resets", after_seq=3, epoch="another-history") as events:
        reset = next(events)
        assert isinstance(reset, Reset) and reset.reason == "epoch"
        assert (reset.epoch, reset.head_seq) == (agent.timeline_epoch, 3) and events.epoch == agent.timeline_epoch
        assert isinstance(next(events), AgentEvent)
        client.append("resets", [say("d")])
        row = next(events)
        assert isinstance(row, Committed) and row.row.seq == 4

    with client.follow("resets", after_seq=99) as events:
        ahead = next(events)
        assert isinstance(ahead, Reset) and ahead.reason == "cursor_ahead" and ahead.head_seq == 4
        assert isinstance(next(events), AgentEvent) and events.cursor == 4


def test_follow_refused_for_good_raises_the_typed_error(live, client):
    with pytest.raises(errors.NotFound):
        next(client.follow("nobody"))
    with live.client(token="wrong") as stranger, pytest.raises(errors.NotAuthenticated):
        next(stranger.follow("nobody"))


def test_async_client_follows_across_dropped_connections(live, client, workspace, proxy):
    async def scenario():
        async with AsyncClient(proxy.base_url, live.token, retry=PATIENT, reconnect=RECONNECT) as aclient:
            agent = await aclient.create_agent(workspace.id, "claude", agent_id="async")
            assert (await aclient.get_agent("async")).version == agent.version
            seqs: list[int] = []
            async with aclient.follow("async", after_seq=0) as events:
                async for event in events:
                    if isinstance(event, AgentEvent) and event.reason == "snapshot" and events.state.connections == 1:
                        # Written by the sync client, in between the async follower's reconnects.
                        await asyncio.to_thread(client.append, "async", [say("1"), say("2"), say("3")])
                    if isinstance(event, Committed):
                        seqs.append(event.row.seq)
                        if event.row.seq == 3:
                            proxy.drop_all()
                            await asyncio.to_thread(client.append, "async", [say("4")])
                        if event.row.seq == 4:
                            break
                assert events.state.connections >= 2
            result = await aclient.append("async", [say("5", "five")])
            again = await aclient.append("async", [say("5", "five")])
            page = await aclient.read_timeline("async")
            return seqs, result, again, page

    seqs, result, again, page = asyncio.run(asyncio.wait_for(scenario(), timeout=120))
    assert seqs == [1, 2, 3, 4]
    assert result.created and not again.created and result.rows[0].seq == again.rows[0].seq == 5
    assert [row.seq for row in page.rows] == [1, 2, 3, 4, 5]
