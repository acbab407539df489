"""The two statements behind a timeline page, as fixed SQL: one ``PageSql`` class per database engine.

A page read is the agent's row, then one index range of its rows bounded by
the limit. Built through the ORM, compiling those two queries and running the
converters per row cost more than the database did (bench/peers.py); here the
SQL is written once per engine and each row comes back as a plain tuple.

Each engine differs in a few small ways, kept in its class:

* how a stored item comes back as JSON text: SQLite keeps the text as it was
  written, PostgreSQL's ``jsonb`` prints it with ``item::text`` (keys in
  ``jsonb`` order, as decoding it through the ORM gives them too);
* how ``committed_at`` comes back as text, parsed here in one C call per row
  (Django's converters and psycopg's timestamptz loader are Python code);
* on PostgreSQL, where a round trip is most of a read, both statements go out
  in one pipeline when the rows do not depend on the agent's row.

The statements go through Django's cursor, so connection handling, query
logging and the test suite's query counts see them like any other query.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar, Literal

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.dateparse import parse_datetime

from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow

Direction = Literal["tail", "before", "after"]

#: What a page row carries, in the order the API renders it.
ROW_FIELDS = ("seq", "committed_at", "item_type", "item", "item_id", "turn_id")


class PageSql:
    """The SQL of a page read on one engine, and what its rows need to become Python values."""

    #: The select-list expressions giving the commit time and the item as JSON text.
    committed_at_column: ClassVar[str] = "committed_at"
    item_column: ClassVar[str] = "item"

    def __init__(self, connection: BaseDatabaseWrapper):
        self.connection = connection
        agents = AgentSnapshot._meta.db_table
        self.agent_sql = f"SELECT head_seq, min_seq, timeline_epoch FROM {agents} WHERE agent_id = %s"
        self.rows_sql: dict[Direction, str] = {
            "tail": self._page_sql("", "seq DESC"),
            "before": self._page_sql(" AND seq < %s", "seq DESC"),
            "after": self._page_sql(" AND seq > %s", "seq"),
        }

    def _page_sql(self, bound: str, order: str) -> str:
        columns = f"seq, {self.committed_at_column}, item_type, {self.item_column}, item_id, turn_id"
        return (
            f"SELECT {columns} FROM {TimelineRow._meta.db_table} WHERE agent_id = %s{bound} ORDER BY {order} LIMIT %s"
        )

    def agent(self, agent_id: str) -> tuple[int, int, str] | None:
        """``(head_seq, min_seq, timeline_epoch)`` of the agent, or None when there is none."""
        with self.connection.cursor() as cursor:
            cursor.execute(self.agent_sql, (agent_id,))
            return cursor.fetchone()

    def agent_and_rows(
        self, agent_id: str, direction: Direction, seq: int | None, limit: int
    ) -> tuple[tuple[int, int, str] | None, list[tuple] | None]:
        """The agent's row and, where the engine gains by reading them in the same trip, the
        rows for ``direction``/``seq`` (None otherwise): the caller uses them only if the
        agent's row leaves the cursor as it was asked."""
        return self.agent(agent_id), None

    def rows(self, agent_id: str, direction: Direction, seq: int | None, limit: int) -> list[tuple]:
        """The page's rows in ascending seq, as tuples of ROW_FIELDS with the item as JSON text
        and ``committed_at`` aware."""
        with self.connection.cursor() as cursor:
            self._send_rows(cursor, agent_id, direction, seq, limit)
            return self._received_rows(cursor, direction)

    def _send_rows(self, cursor, agent_id: str, direction: Direction, seq: int | None, limit: int) -> None:
        params = (agent_id, limit) if direction == "tail" else (agent_id, seq, limit)
        cursor.execute(self.rows_sql[direction], params)

    def _received_rows(self, cursor, direction: Direction) -> list[tuple]:
        found = cursor.fetchall()
        if direction != "after":
            found.reverse()
        return self.with_aware_times(found)

    def with_aware_times(self, rows: list[tuple]) -> list[tuple]:
        zone = self.text_zone()
        parse = dt.datetime.fromisoformat
        try:
            # The usual text, in one C call per row; a function call per row costs as much again.
            parsed = [(seq, parse(at), *rest) for seq, at, *rest in rows]
        except ValueError:
            parsed = [(seq, parse_datetime(at), *rest) for seq, at, *rest in rows]  # what Django's converter accepts
        if zone is None:
            return parsed
        return [(seq, at.replace(tzinfo=zone) if at.tzinfo is None else at, *rest) for seq, at, *rest in parsed]

    def text_zone(self) -> dt.tzinfo | None:
        """The zone of the ``committed_at`` text the statement returns (None: leave naive)."""
        raise NotImplementedError


class SqlitePageSql(PageSql):
    # The unary plus hides the column's declared type from the driver, so the
    # text comes back as stored instead of through Django's converter.
    committed_at_column = "+committed_at"
    item_column = "item"

    def text_zone(self) -> dt.tzinfo | None:
        # Django stores SQLite datetimes as naive text in the connection's zone (UTC unless configured).
        return self.connection.timezone


class PostgresPageSql(PageSql):
    # As fixed-format UTC text: psycopg's timestamptz loader is Python code,
    # the slowest part of a page read; fromisoformat is one C call.
    committed_at_column = """to_char(committed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')"""
    item_column = "item::text"

    def _page_sql(self, bound: str, order: str) -> str:
        # The conversions sit outside the LIMIT, so they run on the page's rows only
        # whatever plan the planner picks: without statistics (a freshly loaded table)
        # it may sort the whole history, and would convert every row of it first.
        # (On SQLite the same shape costs a temporary B-tree, and conversions are cheap.)
        columns = f"seq, {self.committed_at_column}, item_type, {self.item_column}, item_id, turn_id"
        page = (
            f"SELECT seq, committed_at, item_type, item, item_id, turn_id FROM {TimelineRow._meta.db_table} "
            f"WHERE agent_id = %s{bound} ORDER BY {order} LIMIT %s"
        )
        return f"SELECT {columns} FROM ({page}) AS page ORDER BY {order}"

    def agent_and_rows(
        self, agent_id: str, direction: Direction, seq: int | None, limit: int
    ) -> tuple[tuple[int, int, str] | None, list[tuple] | None]:
        # A round trip is most of a page read's time here: when the rows do not
        # depend on the agent's row (a tail, or an explicit cursor), both
        # statements go out in one pipeline.
        if direction != "tail" and seq is None:
            return super().agent_and_rows(agent_id, direction, seq, limit)
        # The pipeline is opened on the driver's connection, which Django opens only with
        # a cursor: once CONN_MAX_AGE had closed it at a request's start, a tail read was a 500.
        self.connection.ensure_connection()
        with (
            self.connection.connection.pipeline(),
            self.connection.cursor() as agents,
            self.connection.cursor() as rows,
        ):
            agents.execute(self.agent_sql, (agent_id,))
            self._send_rows(rows, agent_id, direction, seq, limit)
            return agents.fetchone(), self._received_rows(rows, direction)

    def text_zone(self) -> dt.tzinfo | None:
        return dt.UTC


PAGE_SQL_CLASSES: dict[str, type[PageSql]] = {"sqlite": SqlitePageSql, "postgresql": PostgresPageSql}


def page_sql(alias: str = DEFAULT_DB_ALIAS) -> PageSql:
    """The page statements of the current connection for ``alias`` (one per thread, as connections are)."""
    connection = connections[alias]
    found = getattr(connection, "_chartr_page_sql", None)
    if found is None:
        try:
            page_sql_class = PAGE_SQL_CLASSES[connection.vendor]
        except KeyError:
            raise NotImplementedError(
                f"Timeline pages support SQLite and PostgreSQL, not {connection.vendor}."
            ) from None
        found = connection._chartr_page_sql = page_sql_class(connection)
    return found
