"""PostgreSQL: the append's fixed statements, on psycopg's own cursor, answer as Django's cursor
would, are prepared only where the connection prepares statements, and an append of several
items writes its rows and its head in one statement."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, ProgrammingError, connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.factories import AgentFactory
from timeline.models import TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items
from timeline.writes.append_sql import PostgreSQLStatement

pytestmark = [pytest.mark.skipif("connection.vendor != 'postgresql'"), pytest.mark.django_db]


def test_rows_come_back_as_a_cursor_reads_them():
    agent = AgentFactory()
    statement = PostgreSQLStatement(
        "SELECT a.agent_id, h.head_seq, a.created_at FROM snapshots_agentsnapshot a JOIN timeline_head h ON h.agent_id = a.agent_id WHERE a.agent_id = %s"
    )
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, [agent.agent_id])
        expected = cursor.fetchone()
    assert statement.fetchone([agent.agent_id], connection=connection) == expected
    assert statement.fetchall([agent.agent_id], connection=connection) == [expected]
    assert statement.fetchone(["no-such-agent"], connection=connection) is None


def test_an_error_is_djangos_and_the_transaction_rolls_back():
    agent = AgentFactory()
    append_timeline_items(agent_id=agent.agent_id, items=[NewTimelineItem(item={"type": "note", "text": "a"})])
    duplicate = PostgreSQLStatement(
        "INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item) "
        "SELECT agent_id, seq, committed_at, item_type, item FROM timeline_timelinerow WHERE agent_id = %s"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.execute([agent.agent_id], connection=connection)
    assert TimelineRow.objects.filter(agent=agent).count() == 1


def test_several_items_go_with_the_head_in_one_statement():
    agent = AgentFactory()
    items = [NewTimelineItem(item={"type": "note", "text": f"n{i}"}, item_id=f"id-{i}") for i in range(3)]
    with CaptureQueriesContext(connection) as queries:
        result = append_timeline_items(agent_id=agent.agent_id, items=items)
    writes = [q["sql"] for q in queries.captured_queries if "timeline_timelinerow" in q["sql"] and "INSERT" in q["sql"]]
    assert len(writes) == 1 and "UPDATE" in writes[0]
    agent.refresh_from_db()
    assert [row.seq for row in result.rows] == [1, 2, 3]
    assert (agent.timeline_head.head_seq, agent.timeline_head.committed_rows) == (3, 3)
    assert list(TimelineRow.objects.filter(agent=agent).order_by("seq").values_list("item_id", flat=True)) == [
        "id-0",
        "id-1",
        "id-2",
    ]


def _with_prepare_threshold(threshold):
    connection.ensure_connection()
    raw = connection.connection
    before = raw.prepare_threshold
    raw.prepare_threshold = threshold
    yield raw
    raw.prepare_threshold = before


@pytest.fixture
def preparing_connection():
    """The test's connection with ``prepare_threshold`` set, as OPTIONS would set it."""
    yield from _with_prepare_threshold(0)


@pytest.fixture
def default_connection():
    """The test's connection as Django's default OPTIONS leave it: ``prepare_threshold`` None."""
    yield from _with_prepare_threshold(None)


def _prepared_here() -> list[str]:
    """The statements prepared on the session, by their text."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


def test_nothing_is_prepared_by_default(default_connection):
    agent = AgentFactory()
    append_timeline_items(agent_id=agent.agent_id, items=[NewTimelineItem(item={"type": "note", "text": "a"})])
    assert _prepared_here() == []


def test_with_prepare_threshold_the_statements_are_prepared_once(preparing_connection):
    agent = AgentFactory()
    for text in ("a", "b", "c"):
        append_timeline_items(agent_id=agent.agent_id, items=[NewTimelineItem(item={"type": "note", "text": text})])
    prepared = [text for text in _prepared_here() if "timeline_head" in text]
    # The lock read, the rows with the head and the NOTIFY: each prepared by the first append, reused by the others.
    assert len(prepared) == 2, prepared
    assert [row.seq for row in TimelineRow.objects.filter(agent=agent).order_by("seq")] == [1, 2, 3]
    agent.refresh_from_db()
    assert (agent.timeline_head.head_seq, agent.timeline_head.committed_rows) == (3, 3)


def test_prepared_statements_come_back_after_psycopg_deallocates_its_own(preparing_connection):
    agent = AgentFactory()
    statement = PostgreSQLStatement("SELECT head_seq FROM timeline_head WHERE agent_id = %s")
    assert statement.fetchone([agent.agent_id], connection=connection) == (0,)
    assert len(_prepared_here()) == 1
    with connection.cursor() as cursor:
        # What psycopg also does after a rollback, a DROP or an ALTER: it forgets every name it prepared.
        cursor.execute("DEALLOCATE ALL")
    assert _prepared_here() == []
    assert statement.fetchone([agent.agent_id], connection=connection) == (0,)
    assert len(_prepared_here()) == 1


def test_a_failed_prepare_is_djangos_error_and_nothing_is_recorded(preparing_connection):
    statement = PostgreSQLStatement("SELECT no_such_column FROM timeline_head WHERE agent_id = %s")
    with pytest.raises(ProgrammingError), transaction.atomic():
        statement.fetchone(["x"], connection=connection)
    assert _prepared_here() == []
    # Prepared again at its next run, now that it is right.
    fixed = PostgreSQLStatement("SELECT head_seq FROM timeline_head WHERE agent_id = %s")
    assert fixed.fetchone(["x"], connection=connection) is None
    assert len(_prepared_here()) == 1
