"""``GET /api/v1/search``: the fleet search over the API, keyset-paged, with the error envelope."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.factories import AgentFactory, WorkspaceFactory
from tests.support.api import assert_error
from timeline.models import TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

URL = "/api/v1/search"
START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def say(agent, *texts: str, at: dt.datetime) -> None:
    append_timeline_items(
        agent_id=agent.pk, items=[NewTimelineItem(item={"type": "user_message", "text": t}) for t in texts]
    )
    for row in TimelineRow.objects.filter(agent=agent):
        TimelineRow.objects.filter(pk=row.pk).update(committed_at=at + dt.timedelta(minutes=row.seq))


@pytest.fixture
def agents():
    workspace = WorkspaceFactory()
    old = AgentFactory(workspace=workspace, title="old one")
    new = AgentFactory(title="new one")
    say(old, "the otter swims", "an otter again", at=START)
    say(new, "otter", "fish", at=START + dt.timedelta(days=1))
    return old, new


def test_agents_with_counts_newest_match_first(api, agents):
    old, new = agents
    response = api.get(URL, {"q": "otter"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["next_cursor"] is None
    assert body["results"] == [
        {
            "agent_id": new.pk,
            "title": "new one",
            "workspace_id": new.workspace_id,
            "project_id": new.workspace.project_id,
            "match_count": 1,
            "newest_seq": 1,
            "newest_committed_at": (START + dt.timedelta(days=1, minutes=1)).isoformat(),
        },
        {
            "agent_id": old.pk,
            "title": "old one",
            "workspace_id": old.workspace_id,
            "project_id": old.workspace.project_id,
            "match_count": 2,
            "newest_seq": 2,
            "newest_committed_at": (START + dt.timedelta(minutes=2)).isoformat(),
        },
    ]


def test_filters(api, agents):
    old, new = agents

    def found(**params):
        response = api.get(URL, {"q": "otter", **params})
        assert response.status_code == 200, response.content
        return [(r["agent_id"], r["match_count"]) for r in response.json()["results"]]

    assert found(workspace_id=old.workspace_id) == [(old.pk, 2)]
    assert found(project_id=new.workspace.project_id) == [(new.pk, 1)]
    assert found(item_type="tool_call") == []
    assert found(item_type="user_message") == [(new.pk, 1), (old.pk, 2)]
    assert found(since=(START + dt.timedelta(minutes=2)).isoformat(), until="2026-03-02T00:00:00Z") == [(old.pk, 1)]
    # An offset is honoured: 13:01+01:00 is 12:01 UTC, the old agent's first row.
    assert found(since="2026-03-01T13:01:00+01:00", until="2026-03-01T13:01:30+01:00") == [(old.pk, 1)]
    assert found(since="9999-12-31T23:00:00-05:00") == []
    assert found(until="0001-01-01T01:00:00+05:00") == []


def test_keyset_pages_and_cursor_scope(api, agents):
    old, new = agents
    first = api.get(URL, {"q": "otter", "limit": 1}).json()
    assert [r["agent_id"] for r in first["results"]] == [new.pk] and first["next_cursor"]
    second = api.get(URL, {"q": "otter", "limit": 1, "cursor": first["next_cursor"]}).json()
    assert [r["agent_id"] for r in second["results"]] == [old.pk] and second["next_cursor"] is None
    other_query = api.get(URL, {"q": "otter swims", "limit": 1, "cursor": first["next_cursor"]})
    assert_error(other_query, 400, "invalid", fields=["cursor"])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "q"),
        ({"q": "..."}, "q"),
        ({"q": "x" * 201}, "q"),
        ({"q": "otter", "limit": 0}, "limit"),
        ({"q": "otter", "limit": 101}, "limit"),
        ({"q": "otter", "limit": "ten"}, "limit"),
        ({"q": "otter", "project_id": 0}, "project_id"),
        ({"q": "otter", "workspace_id": "-1"}, "workspace_id"),
        ({"q": "otter", "since": "yesterday"}, "since"),
        ({"q": "otter", "until": "2026-03-01T12:00:00"}, "until"),  # no offset
        ({"q": "otter", "item_type": "x" * 65}, "item_type"),
        ({"q": "otter", "cursor": "not-a-cursor"}, "cursor"),
        ({"q": "otter", "project_id": 10**12}, "project_id"),
        ({"q": "otter", "workspace_id": 10**12}, "workspace_id"),
        ({"q": "otter", "since": "2026-03-01T12:00:00Z", "until": "2026-03-01T12:00:00Z"}, "until"),
        ({"q": "otter", "since": "2026-03-01T13:00:00+01:00", "until": "2026-03-01T11:59:00Z"}, "until"),
        ({"q": "otter", "colour": "red"}, "colour"),
        ({"q": ["otter", "fish"]}, "q"),
        ({"q": "ot\x00ter"}, "q"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(api, agents, params, field):
    assert_error(api.get(URL, params), 400, "invalid", fields=[field])


def test_words_without_letters_match_nothing_on_either_engine(api, agents):
    for q in ("_", '"_ _"', "otter _"):
        response = api.get(URL, {"q": q})
        assert response.status_code == 200, (q, response.content)


def test_needs_a_token_and_only_reads(anon, api, read_only_api, agents):
    assert_error(anon.get(URL, {"q": "otter"}), 401, "not_authenticated")
    assert read_only_api.get(URL, {"q": "otter"}).status_code == 200
    assert_error(api.post(URL, {"q": "otter"}, format="json"), 405, "method_not_allowed")


def test_in_the_openapi_document(api):
    document = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    operation = document["paths"]["/api/v1/search"]["get"]
    assert operation["operationId"] == "search"
    assert {p["name"] for p in operation["parameters"]} == {
        "q",
        "project_id",
        "workspace_id",
        "item_type",
        "since",
        "until",
        "limit",
        "cursor",
    }
    assert sorted(operation["responses"]) == ["200", "400", "401", "406", "429", "500"]
    assert "SearchPage" in document["components"]["schemas"]


@pytest.mark.django_db(transaction=True)
def test_a_search_that_is_its_threads_first_statement_opens_the_connection(agents):
    """A server thread's first request may be a search: its first statement opens the connection
    (on SQLite the search's own statements come before any ORM query)."""
    import threading

    from django.db import connection

    from timeline.search.fleet import search_fleet

    found: list = []

    def search() -> None:
        try:
            assert connection.connection is None  # this thread has not used its connection yet
            found.append(search_fleet(query="otter"))
        except Exception as exc:  # noqa: BLE001 - handed to the test's thread
            found.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=search)
    thread.start()
    thread.join(30)
    assert len(found) == 1 and not isinstance(found[0], Exception), found
    assert [group.agent.pk for group in found[0].groups] == [agents[1].pk, agents[0].pk]
