"""The fleet search's selector: every agent's timeline at once, grouped by agent, on either database."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from snapshots.services import delete_agent
from tests.factories import AgentFactory, WorkspaceFactory
from timeline.models import TimelineRow
from timeline.search.fleet import MAX_LIMIT, search_fleet
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db


def say(agent, *texts: str, kind: str = "user_message") -> None:
    append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item={"type": kind, "text": t}) for t in texts])


def set_times(agent, start: dt.datetime) -> None:
    """The agent's rows committed one minute apart from ``start``, in seq order."""
    for row in TimelineRow.objects.filter(agent=agent).order_by("seq"):
        TimelineRow.objects.filter(pk=row.pk).update(committed_at=start + dt.timedelta(minutes=row.seq))


START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def fleet():
    """Three agents in two workspaces of two projects; "zebra" in some rows of each."""
    first, second = WorkspaceFactory(), WorkspaceFactory()
    a = AgentFactory(workspace=first)
    b = AgentFactory(workspace=first)
    c = AgentFactory(workspace=second)
    say(a, "a zebra here", "no match", "zebra again", "zebra thrice")  # zebra at 1, 3, 4
    say(b, "zebra once", "nothing")  # zebra at 1
    say(c, "llama", "zebra crossing")  # zebra at 2
    append_timeline_items(
        agent_id=c.pk,
        items=[
            NewTimelineItem(
                item={
                    "type": "tool_call",
                    "callId": "t",
                    "name": "bash",
                    "status": "completed",
                    "input": {"cmd": "zebra"},
                }
            )
        ],
    )  # zebra at 3, a tool call
    set_times(a, START)  # newest zebra at +4 min
    set_times(b, START + dt.timedelta(hours=1))  # +61 min
    set_times(c, START + dt.timedelta(minutes=30))  # +33 min
    return {"a": a, "b": b, "c": c}


def summary(page) -> list[tuple[str, int, int]]:
    return [(group.agent.pk, group.match_count, group.newest_seq) for group in page.groups]


def test_groups_by_agent_with_counts_newest_match_first(fleet):
    a, b, c = fleet["a"], fleet["b"], fleet["c"]
    page = search_fleet(query="zebra")
    assert summary(page) == [(b.pk, 1, 1), (c.pk, 2, 3), (a.pk, 3, 4)]
    assert page.next_key is None
    assert page.groups[0].newest_at == START + dt.timedelta(minutes=61)


def test_every_word_must_match_and_phrases_keep_their_order(fleet):
    assert summary(search_fleet(query="zebra again")) == [(fleet["a"].pk, 1, 3)]
    assert summary(search_fleet(query='"crossing zebra"')) == []
    assert summary(search_fleet(query="ZEBRA crossing")) == [(fleet["c"].pk, 1, 2)]


def test_filters_by_item_type_time_workspace_and_project(fleet):
    a, b, c = fleet["a"], fleet["b"], fleet["c"]
    assert summary(search_fleet(query="zebra", item_types=["tool_call"])) == [(c.pk, 1, 3)]
    assert summary(search_fleet(query="zebra", item_types=["tool_call", "user_message"])) == summary(
        search_fleet(query="zebra")
    )
    since, until = START + dt.timedelta(minutes=3), START + dt.timedelta(minutes=33)
    # a's rows at +3 and +4 min; c's at +32 (seq 2) and not +33 (until is exclusive).
    assert summary(search_fleet(query="zebra", since=since, until=until)) == [(c.pk, 1, 2), (a.pk, 2, 4)]
    assert summary(search_fleet(query="zebra", since=until, until=since)) == []
    assert summary(search_fleet(query="zebra", workspace_id=a.workspace_id)) == [(b.pk, 1, 1), (a.pk, 3, 4)]
    assert summary(search_fleet(query="zebra", project_id=c.workspace.project_id)) == [(c.pk, 2, 3)]
    assert summary(search_fleet(query="zebra", project_id=c.workspace.project_id, workspace_id=a.workspace_id)) == []


def test_keyset_pages_cover_every_agent_once(fleet):
    first = search_fleet(query="zebra", limit=2)
    assert summary(first) == [(fleet["b"].pk, 1, 1), (fleet["c"].pk, 2, 3)]
    assert first.next_key == (START + dt.timedelta(minutes=33), fleet["c"].pk)
    second = search_fleet(query="zebra", limit=2, after=first.next_key)
    assert summary(second) == [(fleet["a"].pk, 3, 4)] and second.next_key is None


def test_agents_with_the_same_newest_time_page_by_agent_id(fleet):
    TimelineRow.objects.update(committed_at=START)
    ids = sorted((agent.pk for agent in fleet.values()), reverse=True)
    seen, key = [], None
    for _ in range(3):
        page = search_fleet(query="zebra", limit=1, after=key)
        seen += [group.agent.pk for group in page.groups]
        key = page.next_key
    assert seen == ids and key is None


def test_two_queries_whatever_the_number_of_agents(fleet):
    for _ in range(5):
        say(AgentFactory(), "zebra too")
    search_fleet(query="zebra")  # the SQLite backlog's temp table is made by the first search
    with CaptureQueriesContext(connection) as queries:
        page = search_fleet(query="zebra")
        names = [
            (group.agent.workspace.display_name, group.agent.workspace.project.display_name) for group in page.groups
        ]
    assert len(names) == 8
    searches = 5 if connection.vendor == "sqlite" else 2  # SQLite copies the backlog first (three statements)
    assert len(queries) == searches, [q["sql"] for q in queries.captured_queries]


def test_finds_rows_not_yet_in_sqlites_index_and_forgets_deleted_agents(fleet):
    late = AgentFactory()
    say(late, "zebra just now")
    assert late.pk in [group.agent.pk for group in search_fleet(query="zebra").groups]
    delete_agent(agent=fleet["a"])
    assert fleet["a"].pk not in [group.agent.pk for group in search_fleet(query="zebra").groups]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"query": ""}, "q"),
        ({"query": "  ..  "}, "q"),
        ({"query": "x" * 201}, "q"),
        ({"query": "zebra", "limit": 0}, "limit"),
        ({"query": "zebra", "limit": MAX_LIMIT + 1}, "limit"),
        ({"query": "zebra", "item_types": [f"t{n}" for n in range(21)]}, "item_type"),
    ],
)
def test_bad_arguments_are_refused(arguments, field):
    with pytest.raises(ValidationError) as refused:
        search_fleet(**arguments)
    assert field in refused.value.message_dict
