"""GET /api/v1/agents?ordering=...: the activity times appends set, and keyset
paging that stays exact under every ordering, nulls included."""

from __future__ import annotations

import datetime as dt

import pytest

from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, WorkspaceFactory
from tests.support.api import assert_error
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

ORDERINGS = ["created_at", "-created_at", "updated_at", "-updated_at", "last_activity_at", "-last_activity_at"]
T = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def say(agent_id: str, item_type: str = "user_message") -> None:
    append_timeline_items(agent_id=agent_id, items=[NewTimelineItem(item={"type": item_type, "text": "x"})])


def expected_order(ordering: str) -> list[str]:
    """The order computed in Python: the field (nulls last either way), then agent_id in the same direction."""
    name, descending = ordering.lstrip("-"), ordering.startswith("-")
    column = f"timeline_head__{name}" if name == "last_activity_at" else name
    agents = list(AgentSnapshot.objects.values_list(column, "agent_id"))
    present = sorted((a for a in agents if a[0] is not None), reverse=descending)
    absent = sorted((a for a in agents if a[0] is None), key=lambda a: a[1], reverse=descending)
    return [agent_id for _, agent_id in present + absent]


def all_pages(api, ordering: str, limit: int) -> list[str]:
    seen, cursor = [], None
    while True:
        params = {"ordering": ordering, "limit": limit, **({"cursor": cursor} if cursor else {})}
        response = api.get("/api/v1/agents", params)
        assert response.status_code == 200, response.content
        body = response.json()
        seen += [row["agent_id"] for row in body["results"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return seen


def test_appends_set_the_activity_times(api):
    agent = AgentFactory()
    assert (agent.timeline_head.last_activity_at, agent.timeline_head.last_user_message_at) == (None, None)
    say(agent.pk, "assistant_message")
    after_assistant = api.get(f"/api/v1/agents/{agent.pk}").json()
    assert after_assistant["last_activity_at"] is not None and after_assistant["last_user_message_at"] is None
    say(agent.pk, "user_message")
    after_user = api.get(f"/api/v1/agents/{agent.pk}").json()
    assert after_user["last_user_message_at"] == after_user["last_activity_at"]
    assert after_user["last_activity_at"] > after_assistant["last_activity_at"]
    # The times are the committed rows' times.
    row = api.get(f"/api/v1/agents/{agent.pk}/timeline").json()["rows"][-1]
    assert row["committed_at"] == after_user["last_activity_at"]


def test_activity_times_are_read_only(api):
    agent = AgentFactory()
    response = api.patch(f"/api/v1/agents/{agent.pk}", {"last_activity_at": "2030-01-01T00:00:00Z"}, format="json")
    assert_error(response, 400, "invalid", fields=["last_activity_at"])


def test_latest_activity_first_after_appends(api):
    workspace = WorkspaceFactory()
    for agent_id in ("quiet", "first", "second", "third"):
        AgentFactory(workspace=workspace, agent_id=agent_id)
    for agent_id in ("first", "second", "third", "first"):
        say(agent_id)
    assert all_pages(api, "-last_activity_at", limit=50) == ["first", "third", "second", "quiet"]


@pytest.mark.parametrize("ordering", ORDERINGS)
@pytest.mark.parametrize("limit", [1, 2, 3])
def test_keyset_paging_is_exact_under_every_ordering(api, ordering, limit):
    workspace = WorkspaceFactory()
    # Ties and nulls: two agents share an activity time, two never did anything.
    for agent_id in ["a", "b", "c", "d", "e", "f", "g"]:
        activity = {"a": T, "b": T, "c": T + dt.timedelta(hours=1), "e": T - dt.timedelta(hours=1)}.get(agent_id)
        AgentFactory(workspace=workspace, agent_id=agent_id, last_activity_at=activity)
    say("f")
    expected = expected_order(ordering)
    assert sorted(expected) == ["a", "b", "c", "d", "e", "f", "g"]
    assert all_pages(api, ordering, limit) == expected


def test_unknown_ordering_is_400(api):
    assert_error(api.get("/api/v1/agents", {"ordering": "title"}), 400, "invalid", fields=["ordering"])


def test_a_cursor_continues_only_its_own_ordering(api):
    workspace = WorkspaceFactory()
    for agent_id in ("a", "b", "c"):
        AgentFactory(workspace=workspace, agent_id=agent_id)
    cursor = api.get("/api/v1/agents", {"ordering": "-created_at", "limit": 1}).json()["next_cursor"]
    for other in ("created_at", "-updated_at"):
        response = api.get("/api/v1/agents", {"ordering": other, "cursor": cursor})
        assert_error(response, 400, "invalid", fields=["cursor"])
