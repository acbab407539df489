"""SQLite's search index takes rows in batches, and every search still sees every committed row.

timeline/search/sqlite.py: rows above the index's highest rowid (the watermark)
are the backlog; an append indexes the backlog when its ids reach a multiple of
``INDEX_EVERY``, and a search reads the backlog itself before it matches.
PostgreSQL's expression index has no backlog, so these tests are SQLite's.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from datadir.services import restore_snapshot, take_snapshot
from snapshots.services import delete_agent
from tests.factories import AgentFactory
from timeline.models import TimelineRow
from timeline.search import sqlite as sqlite_search
from timeline.search import timeline_search
from timeline.selectors import find_match
from timeline.services import NewTimelineItem, PendingRow, append_timeline_items, bulk_append_timeline_rows
from timeline.writes.pruning import TrimPolicy, trim_timeline

if connection.vendor != "sqlite":
    # Skipped whole at collection: with these tests collected and skipped one by one, the full
    # PostgreSQL run failed tests/datadir/test_fence.py's 503 test (it passes alone; the cause
    # was not found), and it passes with nothing collected here.
    pytest.skip("PostgreSQL's search index has no backlog", allow_module_level=True)

pytestmark = pytest.mark.django_db


@pytest.fixture
def index_every(monkeypatch):
    """Set ``INDEX_EVERY`` for the test; the default leaves every row of a test in the backlog."""

    def set_to(value: int) -> None:
        monkeypatch.setattr(sqlite_search, "INDEX_EVERY", value)

    set_to(10**12)
    return set_to


def say(agent_id: str, *words: str) -> int:
    """Append one row per word, each its only text; the last seq."""
    result = append_timeline_items(
        agent_id=agent_id, items=[NewTimelineItem(item={"type": "user_message", "text": word}) for word in words]
    )
    return result.head_seq


def indexed_ids() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {sqlite_search.TABLE}")
        return {row[0] for row in cursor.fetchall()}


def assert_watermark_holds() -> None:
    """Every row at or below the index's highest rowid is indexed; the index holds no other row."""
    indexed = indexed_ids()
    watermark = max(indexed, default=0)
    rows = set(TimelineRow.objects.values_list("id", flat=True))
    assert indexed == {row for row in rows if row <= watermark}


def row_id(agent_id: str, seq: int) -> int:
    return TimelineRow.objects.get(agent_id=agent_id, seq=seq).id


def test_a_row_is_found_right_after_its_append_before_it_is_indexed(index_every):
    agent = AgentFactory()
    seq = say(agent.pk, "okapi")
    assert row_id(agent.pk, seq) not in indexed_ids()
    assert find_match(agent_id=agent.pk, query="okapi") == seq
    assert find_match(agent_id=agent.pk, query="okapi", direction="before", seq=seq) is None
    assert find_match(agent_id=agent.pk, query="zebra") is None


def test_the_backlog_of_another_agent_is_not_this_ones(index_every):
    agent, other = AgentFactory(), AgentFactory()
    say(other.pk, "okapi")
    assert find_match(agent_id=agent.pk, query="okapi") is None
    assert find_match(agent_id=other.pk, query="okapi") == 1


def test_an_append_reaching_a_multiple_of_index_every_indexes_the_backlog(index_every):
    index_every(8)
    agent = AgentFactory()
    for n in range(1, 21):
        say(agent.pk, f"w{n}")
        ids = TimelineRow.objects.filter(agent_id=agent.pk).values_list("id", flat=True)
        # Fewer than INDEX_EVERY rows wait at every commit, and every row at or below a multiple is indexed.
        assert len(set(ids) - indexed_ids()) < 8
        assert_watermark_holds()
    assert [find_match(agent_id=agent.pk, query=f"w{n}") for n in range(1, 21)] == list(range(1, 21))


def test_an_append_of_long_items_indexes_the_backlog_at_once(index_every):
    agent = AgentFactory()
    say(agent.pk, "short")
    say(agent.pk, "x" * (sqlite_search.INDEX_AT_ONCE_CHARS - 100))
    assert not indexed_ids()
    say(agent.pk, "long " + "y" * sqlite_search.INDEX_AT_ONCE_CHARS)
    assert indexed_ids() == set(TimelineRow.objects.values_list("id", flat=True))
    assert [find_match(agent_id=agent.pk, query=word) for word in ("short", "long")] == [1, 3]


def test_the_limit_for_indexing_at_once_counts_utf8_bytes_not_the_stored_escapes(index_every):
    agent = AgentFactory()
    # 2 bytes each in UTF-8, under the limit; 6 characters each as stored (\u00e9), over it.
    seq = say(agent.pk, "okapi " + "\u00e9" * (sqlite_search.INDEX_AT_ONCE_CHARS // 3))
    assert not indexed_ids()
    assert find_match(agent_id=agent.pk, query="okapi") == seq


def test_rows_noted_without_their_size_are_indexed_at_once(index_every):
    agent = AgentFactory()
    say(agent.pk, "okapi")
    assert not indexed_ids()
    timeline_search().index_rows(rows=1)
    assert indexed_ids() == {row_id(agent.pk, 1)}
    assert_watermark_holds()


def test_a_backlog_larger_than_index_every_is_indexed_by_one_large_append(index_every):
    agent = AgentFactory()
    say(agent.pk, *(f"a{n}" for n in range(1, 31)))  # 30 rows left waiting
    assert not indexed_ids()
    index_every(16)
    now = dt.datetime.now(dt.UTC)
    rows = [
        PendingRow(
            item={"type": "user_message", "text": f"b{n}"}, item_type="user_message", item_id=None, committed_at=now
        )
        for n in range(1, 41)
    ]
    bulk_append_timeline_rows(agent_id=agent.pk, rows=rows, batch_size=20)
    assert indexed_ids() == set(TimelineRow.objects.values_list("id", flat=True))
    assert find_match(agent_id=agent.pk, query="a7") == 7
    assert find_match(agent_id=agent.pk, query="b40") == 70


def test_search_after_pruning_indexed_and_waiting_rows(index_every):
    agent = AgentFactory()
    say(agent.pk, "one", "two", "three")
    timeline_search().index_backlog()
    say(agent.pk, "four", "five")
    assert_watermark_holds()
    trim_timeline(agent_id=agent.pk, policy=TrimPolicy(keep=1))
    assert not indexed_ids()  # every indexed row was trimmed: the watermark is back to 0
    assert_watermark_holds()
    assert [find_match(agent_id=agent.pk, query=word) for word in ("one", "three", "four", "five")] == [
        None,
        None,
        None,
        5,
    ]
    index_every(1)
    say(agent.pk, "six")
    assert indexed_ids() == set(TimelineRow.objects.values_list("id", flat=True))
    assert find_match(agent_id=agent.pk, query="six") == 6


def test_search_after_deleting_the_agent_holding_the_newest_rows(index_every):
    kept, deleted = AgentFactory(), AgentFactory()
    say(kept.pk, "alpha")
    say(deleted.pk, "beta", "gamma")
    timeline_search().index_backlog()
    say(deleted.pk, "delta")  # waiting, and the newest row
    newest_deleted_id = row_id(deleted.pk, 3)
    delete_agent(agent=deleted)
    assert_watermark_holds()
    # Ids are never reused, so a row appended now lies above every id the index ever held.
    say(kept.pk, "epsilon")
    assert row_id(kept.pk, 2) > newest_deleted_id
    assert_watermark_holds()
    assert [find_match(agent_id=kept.pk, query=w) for w in ("alpha", "epsilon", "beta", "delta")] == [1, 2, None, None]


@pytest.mark.django_db(transaction=True)
def test_going_back_to_indexing_every_row_indexes_the_backlog(index_every):
    agent = AgentFactory()
    say(agent.pk, "one", "two")
    assert not indexed_ids()
    executor = MigrationExecutor(connection)
    executor.migrate([("timeline", "0005_timeline_page_indexes_and_text_search")])
    assert indexed_ids() == set(TimelineRow.objects.values_list("id", flat=True))
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert find_match(agent_id=agent.pk, query="two") == 2


@pytest.mark.django_db(transaction=True)
def test_search_after_a_restore_sees_the_restored_rows(index_every, data_dir):
    agent = AgentFactory()
    say(agent.pk, "one")
    timeline_search().index_backlog()
    say(agent.pk, "two")  # waiting when the snapshot is taken
    snapshot = take_snapshot()
    index_every(1)
    say(agent.pk, "three")  # indexes the backlog: "two" and "three"
    restore_snapshot(name=snapshot.name)
    assert_watermark_holds()
    assert [find_match(agent_id=agent.pk, query=word) for word in ("one", "two", "three")] == [1, 2, None]
    say(agent.pk, "four")
    assert_watermark_holds()
    assert [find_match(agent_id=agent.pk, query=word) for word in ("two", "four")] == [2, 3]
