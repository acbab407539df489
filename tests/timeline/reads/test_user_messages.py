"""``GET …/timeline/user-messages``: Paseo's ``hasCommittedUserMessage`` in one request, and the
projected page that answers an entry overlapping it whole (a cursor inside a message)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import AgentFactory
from tests.timeline.reads.test_paseo_reads import carry_over, url

pytestmark = pytest.mark.django_db


def user(text: str, message_id: str | None) -> dict:
    item = {"type": "user_message", "text": text}
    if message_id is not None:
        item["messageId"] = message_id
    return item


def texts(api, agent_id: str, message_id: str):
    response = api.get(url(agent_id, "/user-messages"), {"message_id": message_id})
    assert response.status_code == 200, response.content
    return response.json()


def test_a_message_id_matches_trimmed_on_both_sides_and_only_user_messages(api):
    agent = AgentFactory()
    carry_over(
        agent.agent_id,
        [
            user("hello", " msg-1 "),
            {"type": "assistant_message", "text": "hello", "messageId": "msg-1"},
            user("other", "msg-2"),
            user("no id", None),
            user("blank", "   "),
        ],
    )

    assert texts(api, agent.agent_id, "msg-1") == {"message_id": "msg-1", "texts": ["hello"]}
    assert texts(api, agent.agent_id, "  msg-1\n") == {"message_id": "msg-1", "texts": ["hello"]}
    assert texts(api, agent.agent_id, "msg-2")["texts"] == ["other"]
    assert texts(api, agent.agent_id, "msg-3")["texts"] == []


def test_a_blank_or_missing_message_id_is_a_400_naming_it(api):
    agent = AgentFactory()
    for query in ({"message_id": "   "}, {}, {"message_id": "a\x00b"}):
        response = api.get(url(agent.agent_id, "/user-messages"), query)
        assert response.status_code == 400, query
        assert response.json()["error"]["code"] == "invalid"
        assert "message_id" in response.content.decode()


def test_an_unknown_agent_is_a_404(api):
    response = api.get(url("nobody", "/user-messages"), {"message_id": "m"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_one_statement_for_the_rows_whatever_the_history_length(api):
    agent = AgentFactory()
    carry_over(agent.agent_id, [user(f"text {n}", f"m-{n}") for n in range(600)])
    with CaptureQueriesContext(connection) as queries:
        assert texts(api, agent.agent_id, "m-599")["texts"] == ["text 599"]
    row_reads = [q for q in queries.captured_queries if "timeline_timelinerow" in q["sql"]]
    assert len(row_reads) == 1


def assistant(text: str, message_id: str = "a-1") -> dict:
    return {"type": "assistant_message", "text": text, "messageId": message_id}


def test_a_projected_page_with_a_cursor_inside_a_message_answers_the_whole_message(api):
    agent = AgentFactory()
    epoch = carry_over(agent.agent_id, [user("q", "u-1"), assistant("A"), assistant("B"), user("next", "u-2")])

    after = api.get(url(agent.agent_id), {"projection": "projected", "direction": "after", "seq": 2, "epoch": epoch})
    before = api.get(url(agent.agent_id), {"projection": "projected", "direction": "before", "seq": 3, "epoch": epoch})

    page = after.json()
    assert [(e["item"]["text"], e["seq_start"], e["seq_end"]) for e in page["rows"]] == [("AB", 2, 3), ("next", 4, 4)]
    assert (page["start_seq"], page["end_seq"]) == (3, 4)
    page = before.json()
    assert [(e["item"]["text"], e["seq_start"], e["seq_end"]) for e in page["rows"]] == [("q", 1, 1), ("AB", 2, 3)]
    assert (page["start_seq"], page["end_seq"]) == (1, 2)


def test_a_canonical_page_reports_its_seq_range_too(api):
    agent = AgentFactory()
    carry_over(agent.agent_id, [user("a", "1"), user("b", "2"), user("c", "3")])

    page = api.get(url(agent.agent_id), {"direction": "after", "seq": 1, "limit": 1}).json()

    assert (page["start_seq"], page["end_seq"]) == (2, 2)
    empty = api.get(url(AgentFactory().agent_id)).json()
    assert (empty["start_seq"], empty["end_seq"]) == (None, None)
