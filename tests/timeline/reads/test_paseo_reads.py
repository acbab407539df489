"""Paseo's AgentTimelineStore reads over HTTP (issue 26): fetchCommitted's window rules, ``limit=0``,
the projected fetch, getLatestCommittedSeq, getLastItem and getLastAssistantMessage.

Paseo-shaped data: randomUUID epochs, carried-over histories that start above seq 1, turn ids,
Paseo's item shapes. The cases restate Paseo's own tests (agent-timeline-store.test.ts)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.factories import AgentFactory
from timeline.reads.last import last_assistant_message, last_item
from timeline.services import bulk_append_timeline_rows
from tokens.services import create_api_token

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class PaseoRow:
    item: dict
    item_type: str
    item_id: str | None
    committed_at: dt.datetime
    turn_id: str | None = None


def url(agent_id: str, tail: str = "") -> str:
    return f"/api/v1/agents/{agent_id}/timeline{tail}"


def carry_over(agent_id: str, items: list[dict], *, start_seq: int = 1, turns=None) -> str:
    """``items`` as Paseo rows start_seq.. in a fresh randomUUID epoch; the epoch."""
    epoch = str(uuid.uuid4())
    turns = turns or [None] * len(items)
    rows = [
        PaseoRow(item, item["type"], None, T0 + dt.timedelta(seconds=seq), turn)
        for seq, item, turn in zip(range(start_seq, start_seq + len(items)), items, turns, strict=True)
    ]
    bulk_append_timeline_rows(agent_id=agent_id, rows=rows, start_seq=start_seq, epoch=epoch)
    return epoch


def said(text: str, message_id: str | None = None) -> dict:
    item = {"type": "assistant_message", "text": text}
    return item if message_id is None else {**item, "messageId": message_id}


def user(text: str) -> dict:
    return {"type": "user_message", "text": text}


def tool(call_id: str, status: str) -> dict:
    return {
        "type": "tool_call",
        "callId": call_id,
        "name": "shell",
        "status": status,
        "error": None,
        "detail": {"type": "plain_text", "label": "work"},
    }


def read(api, agent_id: str, **params) -> dict:
    response = api.get(url(agent_id), params)
    assert response.status_code == 200, response.content
    return response.json()


def seqs(page: dict) -> list[int]:
    return [row["seq"] for row in page["rows"]]


def flags(page: dict) -> tuple:
    return page["reset"], page["stale_cursor"], page["gap"], page["has_older"], page["has_newer"]


@pytest.fixture
def five_to_seven():
    """Paseo's fixture: rows 5, 6, 7 (nextSeq 8), one message each."""
    agent = AgentFactory()
    epoch = carry_over(agent.pk, [said("five", "five"), said("six", "six"), said("seven", "seven")], start_seq=5)
    return agent, epoch


# --- fetchCommitted ---------------------------------------------------------------


def test_an_overshooting_before_cursor_is_clamped_into_the_bounded_tail(api, five_to_seven):
    agent, epoch = five_to_seven
    page = read(api, agent.pk, direction="before", seq=100, limit=2, epoch=epoch)
    assert seqs(page) == [6, 7] and page["epoch"] == epoch
    assert page["window"] == {"min_seq": 5, "max_seq": 7, "next_seq": 8}
    assert flags(page) == (False, False, False, True, False)
    assert page["rows"][0]["item"] == {"type": "assistant_message", "text": "six", "messageId": "six"}


def test_an_after_cursor_behind_retained_history_gets_a_bounded_reset_window(api, five_to_seven):
    agent, epoch = five_to_seven
    page = read(api, agent.pk, direction="after", seq=1, limit=1, epoch=epoch)
    assert page["window"] == {"min_seq": 5, "max_seq": 7, "next_seq": 8}
    assert flags(page) == (True, False, True, True, False)
    assert seqs(page) == [7]
    # At min_seq - 1 nothing was missed: an ordinary page.
    assert flags(read(api, agent.pk, direction="after", seq=4, limit=1, epoch=epoch)) == (
        False,
        False,
        False,
        False,
        True,
    )


def test_another_epoch_is_a_stale_cursor_with_a_fresh_tail(api, five_to_seven):
    agent, _ = five_to_seven
    page = read(api, agent.pk, direction="after", seq=5, limit=2, epoch=str(uuid.uuid4()))
    assert flags(page) == (True, True, False, True, False) and seqs(page) == [6, 7]


def test_an_empty_timeline_has_paseos_empty_window(api):
    agent = AgentFactory()
    for params in ({}, {"limit": 0}, {"direction": "before", "seq": 3}, {"direction": "after", "seq": 0}):
        page = read(api, agent.pk, **params)
        assert page["rows"] == [] and page["window"] == {"min_seq": 0, "max_seq": 0, "next_seq": 1}, params
        assert flags(page) == (False, False, False, False, False), params


@pytest.mark.parametrize(
    "params,expected,has_older,has_newer",
    [
        ({"direction": "after", "seq": 7}, [], True, False),
        ({"direction": "after", "seq": 50}, [], True, False),
        ({"direction": "before", "seq": 5}, [], False, True),
        ({"direction": "before", "seq": 6}, [5], False, True),
        ({"direction": "after", "seq": 5, "limit": 1}, [6], True, True),
        ({"direction": "tail", "limit": 3}, [5, 6, 7], False, False),
    ],
)
def test_has_older_and_has_newer_follow_paseos_rules(api, five_to_seven, params, expected, has_older, has_newer):
    agent, _ = five_to_seven
    page = read(api, agent.pk, **params)
    assert (seqs(page), page["has_older"], page["has_newer"]) == (expected, has_older, has_newer)


def test_limit_zero_reads_every_row_of_the_window(api):
    agent = AgentFactory()
    carry_over(agent.pk, [user(f"u{seq}") for seq in range(1, 251)])
    assert len(read(api, agent.pk)["rows"]) == 200, "the default page is Paseo's 200"
    every = read(api, agent.pk, limit=0)
    assert seqs(every) == list(range(1, 251)) and (every["has_older"], every["has_newer"]) == (False, False)
    assert seqs(read(api, agent.pk, direction="after", seq=10, limit=0)) == list(range(11, 251))
    before = read(api, agent.pk, direction="before", seq=100, limit=0)
    assert seqs(before) == list(range(1, 100)) and (before["has_older"], before["has_newer"]) == (False, True)


def test_limit_zero_past_the_declared_bound_is_a_400_naming_the_setting(api, settings):
    settings.CHARTR_TIMELINE_READ_ALL_MAX_ROWS = 5
    agent = AgentFactory()
    carry_over(agent.pk, [user(f"u{seq}") for seq in range(1, 7)])
    assert seqs(read(api, agent.pk, direction="after", seq=1, limit=0)) == [2, 3, 4, 5, 6]
    for params in ({"limit": 0}, {"limit": 0, "projection": "projected"}, {"direction": "before", "limit": 0}):
        response = api.get(url(agent.pk), params)
        assert response.status_code == 400, params
        error = response.json()["error"]
        assert error["code"] == "too_many_rows" and "CHARTR_TIMELINE_READ_ALL_MAX_ROWS" in error["message"]
        assert (error["setting"], error["max_rows"]) == ("CHARTR_TIMELINE_READ_ALL_MAX_ROWS", 5)


def test_the_latest_committed_seq_is_a_one_row_tails_max_seq(api, five_to_seven):
    agent, _ = five_to_seven
    page = read(api, agent.pk, direction="tail", limit=1)
    assert page["window"]["max_seq"] == 7 and seqs(page) == [7]


# --- the projected fetch -------------------------------------------------------------


def test_the_projected_fetch_folds_paseo_rows(api):
    agent = AgentFactory()
    carry_over(
        agent.pk,
        [
            tool("first", "running"),
            said("with the uncommit", "msg-1"),
            user("keep going"),
            said("ted changes.", "msg-1"),
            tool("first", "completed"),
            said("tail", None),
            tool("first", "running"),
        ],
        start_seq=11,
        turns=["t1", "t1", "t1", "t1", "t1", "t1", "t2"],
    )
    page = read(api, agent.pk, projection="projected", limit=0)
    got = [(e["seq_start"], e["seq_end"], e["source_seq_ranges"], e["item_type"]) for e in page["rows"]]
    # The unnamed chunk at 16 follows the user message in display order (the named chunks
    # folded into 12), so it is an entry of its own, as Paseo's projection makes it.
    assert got == [
        (11, 15, [[11, 11], [15, 15]], "tool_call"),
        (12, 14, [[12, 12], [14, 14]], "assistant_message"),
        (13, 13, [[13, 13]], "user_message"),
        (16, 16, [[16, 16]], "assistant_message"),
        (17, 17, [[17, 17]], "tool_call"),
    ]
    first, message = page["rows"][0], page["rows"][1]
    assert first["item"]["status"] == "completed" and first["collapsed"] == ["tool_lifecycle"]
    assert first["turn_id"] == "t1" and page["rows"][4]["turn_id"] == "t2"
    assert message["item"] == {
        "type": "assistant_message",
        "text": "with the uncommitted changes.",
        "messageId": "msg-1",
    }
    assert message["committed_at"] == (T0 + dt.timedelta(seconds=14)).isoformat()
    assert message["collapsed"] == ["assistant_merge"] and page["rows"][3]["collapsed"] == []
    assert page["window"] == {"min_seq": 11, "max_seq": 17, "next_seq": 18}


def test_a_projected_page_answers_an_entry_it_overlaps_whole(api):
    # As Paseo's selectProjectedTimelinePage (timeline-projection.ts): the entries overlapping the
    # page's seq range, each folded over the whole timeline, so the cursor inside "AB" gets "AB".
    agent = AgentFactory()
    carry_over(agent.pk, [said("A", "m"), said("B", "m"), user("next")])
    page = read(api, agent.pk, projection="projected", direction="after", seq=1)
    assert [(e["seq_start"], e["item"]["text"]) for e in page["rows"]] == [(1, "AB"), (3, "next")]
    assert (page["start_seq"], page["end_seq"]) == (2, 3)
    whole = read(api, agent.pk, projection="projected")
    assert [(e["source_seq_ranges"], e["item"]["text"]) for e in whole["rows"]] == [
        ([[1, 2]], "AB"),
        ([[3, 3]], "next"),
    ]


# --- getLastItem ----------------------------------------------------------------------


def test_last_item(api, five_to_seven):
    agent, _ = five_to_seven
    response = api.get(url(agent.pk, "/last-item"))
    assert response.status_code == 200
    assert response.json() == {"seq": 7, "item": {"type": "assistant_message", "text": "seven", "messageId": "seven"}}
    with CaptureQueriesContext(connection) as queries:
        assert last_item(agent_id=agent.pk).seq == 7
    assert len(queries) == 2, [q["sql"] for q in queries]  # the head, the newest row


def test_last_item_of_an_empty_timeline_and_of_an_unknown_agent(api):
    agent = AgentFactory()
    assert api.get(url(agent.pk, "/last-item")).json() == {"seq": None, "item": None}
    response = api.get(url("nobody", "/last-item"))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


# --- getLastAssistantMessage ------------------------------------------------------------


def last_message(api, agent_id: str) -> dict:
    response = api.get(url(agent_id, "/last-assistant-message"))
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    "items,turns,expected",
    [
        # Paseo: "returns the last projected assistant message without joining different messages"
        ([said("First", "first"), said("Sec", "second"), said("ond", "second")], None, ("Second", 2, 3)),
        # a steering prompt mid-stream does not cut one message
        (
            [said("with the uncommit", "m"), user("keep going"), said("ted changes.", "m")],
            None,
            ("with the uncommitted changes.", 1, 3),
        ),
        # chunks without messageId: the run right before the newest
        ([said("old"), user("q"), said("A"), said("B"), said("C")], None, ("ABC", 3, 5)),
        # rows after the message do not hide it
        ([user("q"), said("An", "a"), said("swer", "a"), tool("t", "running"), user("more")], None, ("Answer", 2, 3)),
        # an unnamed chunk right after a named one continues it (Paseo's "3" + "chunk")
        ([user("q"), said("3", "m3"), said("chunk")], None, ("3chunk", 2, 3)),
        # ...but not once another row lies between the named chunks: the projection folds it apart
        ([said("X", "x"), user("q"), said("Y", "x"), said("Z")], None, ("Z", 4, 4)),
        # a named message passes over an unnamed chunk between its chunks
        ([said("a", "m"), said("x"), said("b", "m")], None, ("ab", 1, 3)),
        # the same messageId in another turn is another message
        ([said("a", "m"), said("b", "m")], ["t1", "t2"], ("b", 2, 2)),
        ([user("only a question")], None, (None, None, None)),
        ([], None, (None, None, None)),
    ],
)
def test_last_assistant_message(api, items, turns, expected):
    agent = AgentFactory()
    if items:
        carry_over(agent.pk, items, start_seq=3 if turns else 1, turns=turns)
    body = last_message(api, agent.pk)
    if turns:
        expected = (expected[0], expected[1] + 2, expected[2] + 2)
    assert (body["text"], body["seq_start"], body["seq_end"]) == expected


def test_last_assistant_message_reads_the_head_and_one_index_range(api):
    agent = AgentFactory()
    carry_over(agent.pk, [said(f"{n} ", "m") if n % 3 else user("u") for n in range(1, 301)])
    body = last_message(api, agent.pk)
    assert body["seq_end"] == 299 and body["text"].startswith("1 2 4 5 ") and body["seq_start"] == 1
    with CaptureQueriesContext(connection) as queries:
        assert last_assistant_message(agent_id=agent.pk).seq_start == 1
    # The agent's head, then one batch per 200 chunks of the message: 200 chunks of 200, then none.
    assert len(queries) == 1 + 2, [q["sql"] for q in queries]
    short = AgentFactory()
    carry_over(short.pk, [user("q"), said("A", "a"), tool("t", "running"), said("B", "a")])
    with CaptureQueriesContext(connection) as queries:
        assert last_assistant_message(agent_id=short.pk).text == "AB"
    assert len(queries) == 2, [q["sql"] for q in queries]  # the head, one batch


def test_last_assistant_message_of_an_unknown_agent_is_404(api):
    response = api.get(url("nobody", "/last-assistant-message"))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_the_new_reads_are_in_the_openapi_document(api):
    paths = api.get("/api/v1/schema").json()["paths"]
    for tail, operation_id in (
        ("/last-item", "timeline_last_item"),
        ("/last-assistant-message", "timeline_last_assistant_message"),
    ):
        operation = paths["/api/v1/agents/{agent_id}/timeline" + tail]["get"]
        assert operation["operationId"] == operation_id and "404" in operation["responses"]


def test_a_read_only_token_reads_the_new_endpoints(five_to_seven):
    agent, _ = five_to_seven
    _, raw = create_api_token(name="reader", read_only=True)
    reader = APIClient()
    assert reader.get(url(agent.pk, "/last-item")).status_code == 401
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert reader.get(url(agent.pk, "/last-item")).json()["seq"] == 7
    assert reader.get(url(agent.pk, "/last-assistant-message")).json() == {
        "text": "seven",
        "seq_start": 7,
        "seq_end": 7,
    }
    # Writing is refused to a read-only token before anything else, and these reads take no write.
    assert reader.post(url(agent.pk, "/last-item"), {}, format="json").status_code == 403


def test_the_new_reads_take_only_get(api, five_to_seven):
    agent, _ = five_to_seven
    for tail in ("/last-item", "/last-assistant-message"):
        response = api.post(url(agent.pk, tail), {}, format="json")
        assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"
        assert api.head(url(agent.pk, tail)).status_code == 200
