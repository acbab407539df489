"""publish_provisional: provisional items reach the current subscribers and are never stored."""

from __future__ import annotations

from tests.factories import AgentFactory
from tests.timeline.live.support import Reader, db, in_thread, run
from timeline.live.hub import Hub
from timeline.live.provisional import publish_provisional
from timeline.live.stream import TimelineStream


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
    assert agent.timeline_head.head_seq == 0 and not agent.timeline_rows.exists()
