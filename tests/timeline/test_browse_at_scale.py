"""At 1M rows, the timeline page's reads stay bounded by their limit: proven by EXPLAIN, not by timing.

The million rows are one agent's, built by one INSERT ... SELECT (a recursive
CTE on SQLite, generate_series on PostgreSQL), then indexed for search the way
each engine does it. They are built once for the module, in a transaction the
module's tests only read from (each inside a savepoint of its own) and that is
rolled back after the last of them. Marked ``slow`` (the build takes about half
a minute on SQLite, a minute on PostgreSQL): ``make test-fast`` leaves it out,
``make test`` runs it.

What each engine's plan must show for a page, a filtered page, a jump to a
seq or a time: a range of one of the (agent, ...) indexes, walked in order
(no sort of the agent's rows, no scan of the table). On PostgreSQL the plan is
also run (EXPLAIN ANALYZE), and the index node must have returned at most
limit + 1 rows. A text search reads the search index (never the table) for
its words' matches.

The fleet search, at the same scale, reads its words' matches from the search
index, never the table: "needle" is in 4 of the big agent's rows, and a second
agent in another project has a few rows of its own. On SQLite the match is the
FTS5 table's, the rows are looked up by their rowid; on PostgreSQL (EXPLAIN
ANALYZE) the GIN index finds the matches and no node of the plan returns more
rows than there are matches, so the search costs what it costs at a thousand rows.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.factories import AgentFactory
from timeline.models import TimelineHead, TimelineRow
from timeline.search import timeline_search
from timeline.search.fleet import search_fleet
from timeline.selectors import (
    TOOL_CALL_LOOKBACK,
    browse_timeline,
    earlier_tool_call_rows,
    find_match,
    read_timeline,
    seq_at_or_after_time,
)
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ROWS = 1_000_000
LIMIT = 50

SQLITE_ROWS = f"""
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ROWS})
INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id)
SELECT %s, i, datetime('2026-01-01', '+' || i || ' seconds'),
       CASE WHEN i % 1000 = 0 THEN 'tool_call' ELSE 'user_message' END,
       json_object('type', CASE WHEN i % 1000 = 0 THEN 'tool_call' ELSE 'user_message' END,
                   'text', CASE WHEN i % 250000 = 0 THEN 'needle ' ELSE '' END || 'row w' || i),
       NULL
FROM n
"""
POSTGRES_ROWS = """
INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id)
SELECT %s, i, timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second',
       CASE WHEN mod(i, 1000) = 0 THEN 'tool_call' ELSE 'user_message' END,
       jsonb_build_object('type', CASE WHEN mod(i, 1000) = 0 THEN 'tool_call' ELSE 'user_message' END,
                          'text', CASE WHEN mod(i, 250000) = 0 THEN 'needle ' ELSE '' END || 'row w' || i),
       NULL
FROM generate_series(1, %s) AS i
"""


@pytest.fixture(scope="module")
def million_row_agent(django_db_setup, django_db_blocker):
    """One agent with a million rows, for every test here: they only read it."""
    with django_db_blocker.unblock(), transaction.atomic():
        agent = build_million_row_agent()
        yield agent
        # Nothing of it outlives the module: the rows, the agent, the rebuilt search index.
        transaction.set_rollback(True)


def build_million_row_agent():
    agent = AgentFactory()
    search = timeline_search()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Building the GIN index once is much cheaper than maintaining it row by row;
            # DDL is transactional here, so the rollback restores it.
            with connection.schema_editor(atomic=False) as editor:
                search.drop_index(editor)
            cursor.execute(POSTGRES_ROWS, [agent.pk, ROWS])
            # The deferred foreign-key checks must run before an index can be built in this transaction.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            with connection.schema_editor(atomic=False) as editor:
                search.create_index(editor)
            cursor.execute("ANALYZE timeline_timelinerow")
        else:
            cursor.execute(SQLITE_ROWS, [agent.pk])
            search.index_rows(rows=ROWS)
            cursor.execute("ANALYZE")
    TimelineHead.objects.filter(pk=agent.pk).update(head_seq=ROWS)
    agent.refresh_from_db()
    return agent


def plans_of(read) -> tuple[object, list[str]]:
    """``read()``'s result and the plan of every query it ran."""
    with CaptureQueriesContext(connection) as queries:
        result = read()
    plans = []
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            if connection.vendor == "postgresql":
                cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + query["sql"])
            else:
                cursor.execute("EXPLAIN QUERY PLAN " + query["sql"])
            plans.append("\n".join(str(row[-1]) for row in cursor.fetchall()))
    return result, plans


def assert_bounded_index_range(plan: str, limit: int) -> None:
    if connection.vendor == "postgresql":
        assert "Seq Scan" not in plan and "Sort" not in plan, plan
        index_nodes = [line for line in plan.splitlines() if "Index Scan" in line or "Index Only Scan" in line]
        assert index_nodes, plan
        for line in index_nodes:
            returned = int(re.search(r"actual rows=(\d+)", line).group(1))
            assert returned <= limit + 1, plan
    elif re.fullmatch(r"SEARCH timeline_head USING INDEX \w+ \(agent_id=\?\)", plan):
        return  # the agent's head, one row by its key
    else:
        assert re.search(r"SEARCH timeline_timelinerow USING (COVERING )?INDEX", plan), plan
        assert "SCAN timeline_timelinerow" not in plan and "TEMP B-TREE" not in plan, plan


def test_page_reads_at_a_million_rows_are_bounded_by_their_limit(million_row_agent):
    agent = million_row_agent
    reads = {
        "tail": lambda: browse_timeline(agent=agent, limit=LIMIT),
        "before": lambda: browse_timeline(agent=agent, direction="before", seq=500_000, limit=LIMIT),
        "around": lambda: browse_timeline(agent=agent, direction="around", seq=500_000, limit=LIMIT),
        "filtered": lambda: browse_timeline(
            agent=agent, item_types=["tool_call"], direction="before", seq=900_000, limit=LIMIT
        ),
        "time": lambda: seq_at_or_after_time(agent_id=agent.pk, at=dt.datetime(2026, 1, 6, 0, 0, 1, tzinfo=dt.UTC)),
    }
    results = {}
    for name, read in reads.items():
        results[name], plans = plans_of(read)
        assert plans, name
        for plan in plans:
            assert_bounded_index_range(plan, LIMIT)
    assert [row.seq for row in results["tail"].rows] == list(range(ROWS - LIMIT + 1, ROWS + 1))
    assert [row.seq for row in results["filtered"].rows][-1] == 899_000
    assert len(results["filtered"].rows) == LIMIT and results["filtered"].has_older
    assert results["time"] == 5 * 86_400 + 1


def test_the_earlier_states_of_a_pages_tool_calls_are_one_bounded_range(million_row_agent):
    # The page's rows need not be saved: the read only takes their seqs and call ids.
    shown = [TimelineRow(seq=900_001, item_type="tool_call", item={"type": "tool_call", "callId": "c"})]
    found, plans = plans_of(lambda: earlier_tool_call_rows(agent_id=million_row_agent.pk, rows=shown))
    assert found == [] and len(plans) == 1
    assert_bounded_index_range(plans[0], TOOL_CALL_LOOKBACK)


def test_search_at_a_million_rows_reads_the_search_index(million_row_agent):
    found, plans = plans_of(
        lambda: find_match(agent_id=million_row_agent.pk, query="needle", direction="before", seq=ROWS)
    )
    assert found == 750_000
    # On SQLite the match follows the copy of the rows not yet indexed (timeline/search/sqlite.py).
    *backlog_copy, plan = plans
    if connection.vendor == "postgresql":
        assert not backlog_copy, backlog_copy
        assert "Bitmap Index Scan on timeline_item_text_search" in plan and "Seq Scan" not in plan, plan
    else:
        assert "SCAN timeline_row_search VIRTUAL TABLE" in plan and "SCAN timeline_timelinerow" not in plan, plan
        # The backlog is a rowid range of the timeline above the index's highest rowid, never a scan.
        for copy in backlog_copy:
            assert "SCAN timeline_timelinerow" not in copy, copy


def test_timeline_api_page_reads_at_a_million_rows_are_bounded_by_their_limit(million_row_agent):
    agent_id = million_row_agent.pk
    for direction, seq in (("tail", None), ("before", 500_000), ("after", 500_000)):
        page, plans = plans_of(
            lambda direction=direction, seq=seq: read_timeline(
                agent_id=agent_id, direction=direction, seq=seq, limit=LIMIT
            )
        )
        _agent_row, rows = plans
        assert_bounded_index_range(rows, LIMIT)
        expected_first = {"tail": ROWS - LIMIT + 1, "before": 500_000 - LIMIT, "after": 500_001}[direction]
        assert [row["seq"] for row in page.rows] == list(range(expected_first, expected_first + LIMIT)), direction


#: "needle" is in rows 250000, 500000, 750000 and 1000000 of the big agent, and in 2 of the small one's.
MATCHES = 4 + 2


@pytest.fixture(scope="module")
def fleet(million_row_agent, django_db_blocker):
    """The million-row agent beside a second agent in another project, with a few rows of its own
    (inside the module's transaction, so rolled back with it)."""
    with django_db_blocker.unblock():
        small = AgentFactory()
        append_timeline_items(
            agent_id=small.pk,
            items=[NewTimelineItem(item={"type": "user_message", "text": f"needle {n}"}) for n in range(2)]
            + [NewTimelineItem(item={"type": "user_message", "text": "hay"})],
        )
    return million_row_agent, small


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
