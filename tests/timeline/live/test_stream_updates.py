"""Row updates on the live stream (``updates=1``): live, and replayed exactly once on a reconnect."""

from __future__ import annotations

from tests.factories import AgentFactory
from tests.timeline.live.support import Reader, append, db, in_thread, run
from timeline.live.hub import Hub
from timeline.live.messages import Updated, decode_message, encode_message
from timeline.live.stream import TimelineStream
from timeline.writes.revisions import RowContent, update_row


def tool(output: str) -> dict:
    """A tool call: running, or completed with ``output``."""
    if output == "running":
        return {"type": "tool_call", "callId": "c1", "name": "shell", "status": "running"}
    return {"type": "tool_call", "callId": "c1", "name": "shell", "status": "completed", "output": output}


def update(agent_id: str, seq: int, output: str):
    return update_row(agent_id=agent_id, seq=seq, content=RowContent(item=tool(output)))


async def events_until(reader: Reader, kind: str, count: int) -> list[tuple[str, dict, str]]:
    seen = []
    while sum(1 for event in seen if event[0] == kind) < count:
        seen.append(await reader.next())
    return seen


def test_an_updated_message_crosses_processes_as_it_was():
    message = Updated(agent_id="a", update_seq=7, seq=3, epoch="e")
    assert decode_message(encode_message(message, "o1")) == ("o1", message)


@db
def test_a_live_update_is_an_updated_event_with_both_cursors_in_its_id():
    agent = AgentFactory()
    append(agent.pk, "a")

    async def scenario(hub: Hub):
        plain = Reader(TimelineStream(hub, agent.pk, after_seq=1, epoch=None))
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=1, epoch=None, updates=True))
        assert (await reader.next())[2] == "1:0"
        assert (await plain.next())[2] == "1"
        await in_thread(append_tool, agent.pk)
        kind, data, event_id = await reader.next()
        assert (kind, data["seq"], event_id) == ("committed", 2, "2:0")
        await in_thread(update, agent.pk, 2, "completed")
        kind, data, event_id = await reader.next()
        assert (kind, data["seq"], data["item"]["output"], data["revision"], event_id) == (
            "updated",
            2,
            "completed",
            2,
            "2:1",
        )
        # A stream that did not ask for updates gets the new row and nothing of the update.
        assert (await plain.next())[0:3:2] == ("committed", "2")
        await reader.close()
        await plain.close()

    run(scenario)


def append_tool(agent_id: str):
    from timeline.services import NewTimelineItem, append_timeline_items

    append_timeline_items(agent_id=agent_id, items=[NewTimelineItem(item=tool("running"))])


@db
def test_a_reconnect_gets_every_missed_update_once_and_the_new_rows():
    agent = AgentFactory()
    append_tool(agent.pk)
    append_tool(agent.pk)
    update(agent.pk, 1, "s1")  # update 1: before the cursor, already seen

    def meanwhile():
        update(agent.pk, 1, "s2")  # 2
        update(agent.pk, 2, "s3")  # 3
        update(agent.pk, 1, "s4")  # 4
        append(agent.pk, "new")  # row 3
        update_row(agent_id=agent.pk, seq=3, content=RowContent(item={"type": "user_message", "text": "new2"}))  # 5
        update(agent.pk, 2, "s3")  # the same content again: nothing

    async def scenario(hub: Hub):
        await in_thread(meanwhile)
        reader = Reader(TimelineStream(hub, agent.pk, after_seq=2, epoch=None, updates=True, after_update=1))
        events = await events_until(reader, "updated", 3)
        events += await events_until(reader, "committed", 0)
        kinds = [(kind, data.get("seq"), event_id) for kind, data, event_id in events]
        assert kinds == [
            ("agent", None, "2:1"),
            ("committed", 3, "3:1"),
            ("updated", 1, "3:2"),
            ("updated", 2, "3:3"),
            ("updated", 1, "3:4"),
        ]
        statuses = [data["item"].get("output") for kind, data, _ in events if kind == "updated"]
        assert statuses == ["s2", "s3", "s4"]
        # Row 3 came with update 5's content, so update 5 is not sent again.
        assert events[1][1]["item"]["text"] == "new2"
        await in_thread(update, agent.pk, 2, "s6")
        kind, data, event_id = await reader.next()
        assert (kind, data["seq"], event_id) == ("updated", 2, "3:6")
        await reader.close()

    run(scenario)
