"""Updating a committed row in place (timeline.writes.revisions.update_row and PUT /timeline/rows/{seq})."""

from __future__ import annotations

import pytest
from django.db import connection

from snapshots.services import archive_agent
from tests.factories import AgentFactory
from tests.timeline.api.test_api import client_with
from timeline.models import TimelineHead, TimelineRow, TimelineRowRevision
from timeline.selectors import find_match
from timeline.services import NewTimelineItem, append_timeline_items
from timeline.writes.counters import check_counters

pytestmark = pytest.mark.django_db

RUNNING = {"type": "tool_call", "callId": "call-1", "name": "shell", "status": "running"}
DONE = {**RUNNING, "status": "completed", "output": "zebra"}


def row_url(agent_id: str, seq) -> str:
    return f"/api/v1/agents/{agent_id}/timeline/rows/{seq}"


def seeded(*items):
    agent = AgentFactory()
    append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=item) for item in items])
    return agent


@pytest.fixture
def api():
    return client_with()


def test_update_keeps_the_seq_and_the_earlier_version(api):
    agent = seeded({"type": "user_message", "text": "run"}, RUNNING)
    before = TimelineRow.objects.get(agent=agent, seq=2)
    body = {"item": DONE, "committed_at": "2026-01-01T00:00:09Z", "turn_id": "t1", "revert_token": None}
    answer = api.put(row_url(agent.pk, 2), body, format="json")
    assert answer.status_code == 200, answer.content
    document = answer.json()
    assert document["changed"] is True and document["update_seq"] == 1
    assert document["row"]["seq"] == 2 and document["row"]["item"] == DONE and document["row"]["revision"] == 2
    assert document["row"]["committed_at"] == "2026-01-01T00:00:09+00:00"
    assert document["row"]["turn_id"] == "t1" and document["row"]["revert_token"] is None

    page = api.get(f"/api/v1/agents/{agent.pk}/timeline").json()
    assert [(r["seq"], r["revision"]) for r in page["rows"]] == [(1, 1), (2, 2)]
    assert page["rows"][1]["item"] == DONE and page["window"]["max_seq"] == 2
    (kept,) = TimelineRowRevision.objects.filter(row__agent=agent)
    assert kept.revision == 1 and kept.item == RUNNING and kept.committed_at == before.committed_at
    assert kept.update_seq is None and kept.turn_id is None
    assert TimelineHead.objects.get(pk=agent.pk).update_seq == 1
    # The growth counters follow the item's new size.
    assert check_counters(repair=False) == []


def test_the_same_content_again_changes_nothing(api):
    agent = seeded(RUNNING)
    body = {"item": DONE, "committed_at": "2026-01-01T00:00:09+00:00"}
    first = api.put(row_url(agent.pk, 1), body, format="json").json()
    again = api.put(row_url(agent.pk, 1), body, format="json")
    assert again.status_code == 200
    assert again.json()["changed"] is False and again.json()["row"] == first["row"]
    assert TimelineRowRevision.objects.filter(row__agent=agent).count() == 1
    assert TimelineHead.objects.get(pk=agent.pk).update_seq == 1
    # A null revert token is other content than none.
    token = api.put(row_url(agent.pk, 1), {**body, "revert_token": None}, format="json").json()
    assert token["changed"] is True and token["update_seq"] == 2 and token["row"]["revision"] == 3


def test_unknown_seq_agent_and_bad_bodies(api):
    agent = seeded(RUNNING)
    missing = api.put(row_url(agent.pk, 5), {"item": DONE}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "row_not_found"
    assert api.put(row_url("nobody", 1), {"item": DONE}, format="json").json()["error"]["code"] == "not_found"
    for body in ({"item": {"type": ""}}, {"item": DONE, "seq": 1}, {"item": DONE, "committed_at": "yesterday"}):
        refused = api.put(row_url(agent.pk, 1), body, format="json")
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid", body
    for seq in (0, 2**63, 10**30):
        nowhere = api.put(row_url(agent.pk, seq), {"item": DONE}, format="json")
        assert (nowhere.status_code, nowhere.json()["error"]["code"]) == (404, "row_not_found"), seq
    assert client_with(read_only=True).put(row_url(agent.pk, 1), {"item": DONE}, format="json").status_code == 403
    archive_agent(agent=agent)
    assert api.put(row_url(agent.pk, 1), {"item": DONE}, format="json").json()["error"]["code"] == "archived"
    assert TimelineRow.objects.get(agent=agent).item == RUNNING


def test_revisions_go_with_their_row_in_the_database():
    agent = seeded(RUNNING)
    client_with().put(row_url(agent.pk, 1), {"item": DONE}, format="json")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM timeline_timelinerow WHERE agent_id = %s", [agent.pk])
    assert not TimelineRowRevision.objects.filter(agent=agent).exists()


def test_an_updated_row_is_found_by_its_new_words(api):
    agent = seeded(*[{"type": "user_message", "text": f"filler {n}"} for n in range(70)], RUNNING)
    api.put(row_url(agent.pk, 71), {"item": DONE}, format="json")
    assert find_match(agent_id=agent.pk, query="zebra") == 71
    assert find_match(agent_id=agent.pk, query="running") is None
