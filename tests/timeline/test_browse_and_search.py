"""The admin timeline page's selectors: filtered pages, jumps and text search, on either database."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection

from snapshots.services import delete_agent
from tests.factories import AgentFactory
from timeline.search import timeline_search
from timeline.search.base import query_terms
from timeline.selectors import browse_timeline, find_match, seq_at_or_after_time
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

TYPES = ["user_message", "assistant_message", "tool_call"]


def item(n: int) -> dict:
    kind = TYPES[n % 3]
    if kind == "tool_call":
        return {"type": kind, "callId": f"c{n}", "name": "bash", "status": "completed", "input": {"cmd": f"make t{n}"}}
    return {"type": kind, "text": f"message number{n} about {'zebra' if n % 10 == 0 else 'llama'}"}


@pytest.fixture
def agent30():
    agent = AgentFactory()
    append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=item(n)) for n in range(1, 31)])
    agent.refresh_from_db()
    return agent


def seqs(page) -> list[int]:
    return [row.seq for row in page.rows]


# Seq n holds item(n): tool_call when n % 3 == 2, user_message when 0, assistant_message when 1;
# "zebra" in the text of 10 and 30 (20 is a tool call).


class TestBrowse:
    def test_tail_before_after_around(self, agent30):
        tail = browse_timeline(agent=agent30, limit=5)
        assert seqs(tail) == [26, 27, 28, 29, 30] and (tail.has_older, tail.has_newer) == (True, False)
        before = browse_timeline(agent=agent30, direction="before", seq=3, limit=5)
        assert seqs(before) == [1, 2] and (before.has_older, before.has_newer) == (False, True)
        after = browse_timeline(agent=agent30, direction="after", seq=27, limit=5)
        assert seqs(after) == [28, 29, 30] and (after.has_older, after.has_newer) == (True, False)
        around = browse_timeline(agent=agent30, direction="around", seq=15, limit=6)
        assert seqs(around) == [13, 14, 15, 16, 17, 18] and (around.has_older, around.has_newer) == (True, True)

    def test_filtered_pages_hold_only_those_types_in_seq_order(self, agent30):
        tools = browse_timeline(agent=agent30, item_types=["tool_call"], limit=4)
        assert seqs(tools) == [20, 23, 26, 29] and tools.has_older and not tools.has_newer
        assert {row.item_type for row in tools.rows} == {"tool_call"}
        two = browse_timeline(
            agent=agent30, item_types=["tool_call", "user_message"], direction="before", seq=10, limit=4
        )
        assert seqs(two) == [5, 6, 8, 9] and two.has_older and two.has_newer
        none = browse_timeline(agent=agent30, item_types=["compaction"], limit=4)
        assert seqs(none) == [] and not none.has_older and not none.has_newer

    def test_around_a_seq_of_another_type_centres_on_its_place(self, agent30):
        page = browse_timeline(agent=agent30, item_types=["tool_call"], direction="around", seq=16, limit=4)
        assert seqs(page) == [11, 14, 17, 20]


class TestJumpToTime:
    def test_first_row_at_or_after(self, agent30):
        from timeline.models import TimelineRow

        base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        for row in TimelineRow.objects.filter(agent=agent30):
            TimelineRow.objects.filter(pk=row.pk).update(committed_at=base + dt.timedelta(minutes=row.seq))
        assert seq_at_or_after_time(agent_id=agent30.pk, at=base + dt.timedelta(minutes=7)) == 7
        assert seq_at_or_after_time(agent_id=agent30.pk, at=base + dt.timedelta(minutes=7, seconds=1)) == 8
        assert seq_at_or_after_time(agent_id=agent30.pk, at=base) == 1
        assert seq_at_or_after_time(agent_id=agent30.pk, at=base + dt.timedelta(hours=1)) is None


class TestSearch:
    def test_newest_previous_and_next_match(self, agent30):
        assert find_match(agent_id=agent30.pk, query="zebra") == 30
        assert find_match(agent_id=agent30.pk, query="zebra", direction="before", seq=30) == 10
        assert find_match(agent_id=agent30.pk, query="ZEBRA", direction="after", seq=10) == 30
        assert find_match(agent_id=agent30.pk, query="zebra", direction="before", seq=10) is None

    def test_every_word_must_occur_and_quotes_make_a_phrase(self, agent30):
        assert find_match(agent_id=agent30.pk, query="number7 llama") == 7
        assert find_match(agent_id=agent30.pk, query="number7 zebra") is None
        assert find_match(agent_id=agent30.pk, query='"about llama" number7') == 7
        assert find_match(agent_id=agent30.pk, query='"llama about"') is None

    def test_string_values_anywhere_in_the_item_are_text_keys_are_not(self, agent30):
        assert find_match(agent_id=agent30.pk, query="t29") == 29  # tool_call input.cmd
        assert find_match(agent_id=agent30.pk, query="callId") is None
        assert find_match(agent_id=agent30.pk, query="cmd") is None

    def test_filtered_by_type(self, agent30):
        assert find_match(agent_id=agent30.pk, query="zebra", item_types=["assistant_message"]) == 10
        assert find_match(agent_id=agent30.pk, query="bash", item_types=["user_message"]) is None

    @pytest.mark.parametrize(
        "query", ["", "   ", '"', "***", "AND OR NOT", 'a" OR "b', "NEAR(x y)", "-x", "x:y", "é" * 300]
    )
    def test_any_input_is_words_never_syntax(self, agent30, query):
        # No FTS5 or tsquery syntax error, whatever the operator types.
        find_match(agent_id=agent30.pk, query=query)

    def test_only_this_agents_rows(self, agent30):
        other = AgentFactory()
        append_timeline_items(
            agent_id=other.pk, items=[NewTimelineItem(item={"type": "user_message", "text": "okapi"})]
        )
        assert find_match(agent_id=agent30.pk, query="okapi") is None
        assert find_match(agent_id=other.pk, query="okapi") == 1

    def test_deleted_rows_leave_the_index(self, agent30):
        append_timeline_items(
            agent_id=agent30.pk, items=[NewTimelineItem(item={"type": "user_message", "text": "ibex"})]
        )
        delete_agent(agent=agent30)
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM timeline_row_search WHERE timeline_row_search MATCH 'ibex'")
                assert cursor.fetchone()[0] == 0

    def test_bulk_appends_are_searchable_too(self):
        from timeline.services import PendingRow, bulk_append_timeline_rows

        agent = AgentFactory()
        now = dt.datetime.now(dt.UTC)
        rows = [
            PendingRow(
                item={"type": "user_message", "text": f"bulk w{n}"},
                item_type="user_message",
                item_id=None,
                committed_at=now,
            )
            for n in range(1, 13)
        ]
        bulk_append_timeline_rows(agent_id=agent.pk, rows=rows, batch_size=5)
        assert [find_match(agent_id=agent.pk, query=f"w{n}") for n in (1, 5, 6, 12)] == [1, 5, 6, 12]


def test_query_terms():
    assert query_terms('Foo "bar baz" qux.quux') == [["foo"], ["bar", "baz"], ["qux", "quux"]]
    assert query_terms('"" ! ?') == []


def test_one_search_class_per_engine():
    assert (
        type(timeline_search()).__name__
        == {"sqlite": "SQLiteTimelineSearch", "postgresql": "PostgreSQLTimelineSearch"}[connection.vendor]
    )
