"""At a million rows the fleet search reads its words' matches from the search index, never the table.

The rows are built as tests/timeline/test_browse_at_scale.py builds them (one
agent's million rows, "needle" in 4 of them, then indexed the way each engine
does it), beside a second agent in another project with a few rows of its
own. Proven by EXPLAIN, not by timing: on SQLite the match is the FTS5 table's,
the rows are looked up by their rowid; on PostgreSQL (EXPLAIN ANALYZE) the
GIN index finds the matches and no node of the plan returns more rows than
there are matches, so the search costs what it costs
at a thousand rows. Marked ``slow``: ``make test`` runs it.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection, transaction

from tests.factories import AgentFactory
from tests.timeline.test_browse_at_scale import ROWS, build_million_row_agent, plans_of
from timeline.search.fleet import search_fleet
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

#: "needle" is in rows 250000, 500000, 750000 and 1000000 of the big agent, and in 2 of the small one's.
MATCHES = 4 + 2


@pytest.fixture(scope="module")
def fleet(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        small = AgentFactory()
        append_timeline_items(
            agent_id=small.pk,
            items=[NewTimelineItem(item={"type": "user_message", "text": f"needle {n}"}) for n in range(2)]
            + [NewTimelineItem(item={"type": "user_message", "text": "hay"})],
        )
        big = build_million_row_agent()
        yield big, small
        transaction.set_rollback(True)


def assert_reads_only_the_matches(plan: str) -> None:
    if connection.vendor == "postgresql":
        # The agents and workspaces (a few rows here) may be scanned; the timeline never.
        assert "Seq Scan on timeline_timelinerow" not in plan, plan
        assert "Bitmap Index Scan on timeline_item_text_search" in plan, plan
        for line in plan.splitlines():
            found = re.search(r"actual rows=(\d+)", line)
            assert found is None or int(found.group(1)) <= MATCHES, plan
    else:
        assert "SCAN timeline_row_search VIRTUAL TABLE" in plan, plan
        assert "SCAN timeline_timelinerow" not in plan, plan
        assert "SCAN snapshots_agentsnapshot" not in plan and "SCAN registry_workspace" not in plan, plan


def test_the_fleet_search_reads_the_search_index_at_a_million_rows(fleet):
    big, small = fleet
    searches = {
        "all": lambda: search_fleet(query="needle"),
        "project": lambda: search_fleet(query="needle", project_id=big.workspace.project_id),
        "workspace": lambda: search_fleet(query="needle", workspace_id=small.workspace_id),
        "type and time": lambda: search_fleet(
            query="needle",
            item_types=["tool_call", "assistant_message"],
            since=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            until=dt.datetime(2026, 1, 8, tzinfo=dt.UTC),
        ),
    }
    results = {}
    for name, search in searches.items():
        results[name], plans = plans_of(search)
        *backlog_copy, match, _agents = plans  # the agents: the page's few, by their keys
        assert_reads_only_the_matches(match)
        for copy in backlog_copy:  # SQLite's copy of the rows not yet indexed: a rowid range, never a scan
            assert "SCAN timeline_timelinerow" not in copy, copy
    summary = {name: [(g.agent.pk, g.match_count, g.newest_seq) for g in page.groups] for name, page in results.items()}
    assert summary["all"] == [(small.pk, 2, 2), (big.pk, 4, ROWS)]
    assert summary["project"] == [(big.pk, 4, ROWS)]
    assert summary["workspace"] == [(small.pk, 2, 2)]
    # The big agent's needles are tool calls (every 1000th row), the first two before 2026-01-08
    # (row i is committed i seconds after 2026-01-01); the small agent's are user messages.
    assert summary["type and time"] == [(big.pk, 2, 500_000)]
