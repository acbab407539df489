"""The two statements behind a timeline page, as fixed SQL: one ``PageSql`` class per database engine.

A page read is the agent's row, then one index range of its rows bounded by
the limit. Built through the ORM, compiling those two queries and running the
converters per row cost more than the database did (bench/peers.py); here the
SQL is written once per engine, sent on the driver's own cursors (kept for the
next page), and the rows become dicts in one pass.

Each engine differs in a few small ways, kept in its class:

* how a stored item comes back as JSON text: SQLite keeps the text as it was
  written, PostgreSQL's ``jsonb`` prints it with ``item::text`` (keys in
  ``jsonb`` order, as decoding it through the ORM gives them too);
* how ``committed_at`` comes back: on SQLite as its stored UTC text made
  aware in SQL, parsed in one C call per row (Django's converter is Python
  code); on PostgreSQL as the column itself in binary, for psycopg's C loader;
* on PostgreSQL, where a round trip is most of a read, both statements go out
  in one pipeline when the rows do not depend on the agent's row, values are
  bound on the server (the statements' text never changes) and rows come back
  in binary.

When Django records queries (``DEBUG``, a test's ``CaptureQueriesContext``)
the statements go through Django's cursor instead, so query logging and the
test suite's query counts see them like any other query.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar, Literal

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.dateparse import parse_datetime
from msgspec.json import decode

from kernel.engines import for_engine
from timeline.models import TimelineHead, TimelineRow

Direction = Literal["tail", "before", "after"]

#: The columns after the item that come back as they are.
PLAIN_COLUMNS = "item_id, turn_id, provider_message_id, provider_timeline_item_id"


class PageSql:
    """The SQL of a page read on one engine, and what its rows need to become Python values."""

    #: The select-list expressions giving the commit time and the item as JSON text.
    committed_at_column: ClassVar[str] = "committed_at"
    item_column: ClassVar[str] = "item"
    #: The same for the two other JSON columns.
    json_columns: ClassVar[str] = "revert_token, COALESCE(extra, '{}')"
    #: The driver's paramstyle, for the statements sent on its own cursors.
    placeholder: ClassVar[str] = "%s"

    def __init__(self, connection: BaseDatabaseWrapper):
        self.connection = connection
        # Every agent has its head (``TimelineHead``): no head, no agent.
        heads = TimelineHead._meta.db_table
        self.agent_sql = (
            f"SELECT head_seq, min_seq, epoch, committed_rows, backfilling FROM {heads} WHERE agent_id = %s"
        )
        self.rows_sql: dict[Direction, str] = {
            "tail": self._page_sql("", "seq DESC"),
            "before": self._page_sql(" AND seq < %s", "seq DESC"),
            "after": self._page_sql(" AND seq > %s", "seq"),
        }
        self._driver_sql = {
            sql: sql.replace("%s", self.placeholder) for sql in (self.agent_sql, *self.rows_sql.values())
        }
        self._kept_cursors: list[Any] = []

    def columns(self) -> str:
        return (
            f"seq, {self.committed_at_column}, item_type, {self.item_column}, {PLAIN_COLUMNS}, {self.json_columns}, "
            "COALESCE(revision, 1)"
        )

    def _page_sql(self, bound: str, order: str) -> str:
        columns = self.columns()
        return (
            f"SELECT {columns} FROM {TimelineRow._meta.db_table} WHERE agent_id = %s{bound} ORDER BY {order} LIMIT %s"
        )

    @contextmanager
    def _cursors(self, count: int) -> Iterator[tuple[list[Any], dict[str, str] | None]]:
        """``count`` cursors, and the statements' texts for them (None: as written, for Django's).

        When Django records queries (``DEBUG``, a test's ``CaptureQueriesContext``) or an
        ``execute_wrapper`` is installed, they are Django's cursors, so the statements are
        seen as every other query is. Otherwise they are the driver's own, kept for the next
        page: Django's cursor wrapper cost as much CPU per statement as SQLite's work on it.
        """
        connection = self.connection
        if connection.queries_logged or connection.execute_wrappers:
            with ExitStack() as stack:
                yield [stack.enter_context(connection.cursor()) for _ in range(count)], None
            return
        # What Django's cursor checks before each statement.
        connection.close_if_health_check_failed()
        connection.ensure_connection()
        connection.validate_thread_sharing()
        connection.validate_no_broken_transaction()
        raw = connection.connection
        kept = self._kept_cursors
        if len(kept) < count or kept[0].connection is not raw or getattr(kept[0], "closed", False):
            kept[:] = [self.driver_cursor(raw) for _ in range(max(count, 2))]
        with connection.wrap_database_errors:
            yield kept[:count], self._driver_sql

    def driver_cursor(self, raw_connection) -> Any:
        return raw_connection.cursor()

    def execute(self, cursor, texts: dict[str, str] | None, sql: str, params: tuple) -> None:
        """Run ``sql`` on ``cursor``: a driver's (``texts`` holds its text for it) or Django's (``texts`` None)."""
        cursor.execute(texts[sql] if texts else sql, params)

    def agent(self, agent_id: str) -> tuple[int, int, str, int, bool] | None:
        """``(head_seq, min_seq, timeline_epoch, committed_rows, backfilling)`` of the agent's timeline head, or None when there is no agent."""
        with self._cursors(1) as ((cursor,), texts):
            self.execute(cursor, texts, self.agent_sql, (agent_id,))
            return cursor.fetchone()

    def agent_and_rows(
        self, agent_id: str, direction: Direction, seq: int | None, limit: int, *, decode_items: bool
    ) -> tuple[tuple[int, int, str, int, bool] | None, list[dict] | None]:
        """The agent's row and, where the engine gains by reading them in the same trip, the
        page's rows for ``direction``/``seq`` (None otherwise): the caller uses them only if
        the agent's row leaves the cursor as it was asked."""
        return self.agent(agent_id), None

    def rows(
        self, agent_id: str, direction: Direction, seq: int | None, limit: int, *, decode_items: bool
    ) -> list[dict]:
        """The page's rows in ascending seq, as dicts of ROW_FIELDS with ``committed_at`` aware
        and the item decoded (``decode_items``) or left as the JSON text the database holds."""
        with self._cursors(1) as ((cursor,), texts):
            self._send_rows(cursor, texts, agent_id, direction, seq, limit)
            return self._received_rows(cursor, direction, decode_items)

    def _send_rows(
        self, cursor, texts: dict[str, str] | None, agent_id: str, direction: Direction, seq: int | None, limit: int
    ) -> None:
        sql = self.rows_sql[direction]
        params = (agent_id, limit) if direction == "tail" else (agent_id, seq, limit)
        self.execute(cursor, texts, sql, params)

    def _received_rows(self, cursor, direction: Direction, decode_items: bool) -> list[dict]:
        found = cursor.fetchall()
        if direction != "after":
            found.reverse()
        return self.page_rows(found, decode_items=decode_items)

    def page_rows(self, found: list[tuple], *, decode_items: bool) -> list[dict]:
        """Rows of ROW_FIELDS as dicts: no model instance is built for a row the API only renders."""
        items = [row[3] for row in found]
        tokens = [row[8] for row in found]
        extras = [row[9] for row in found]
        if decode_items:
            items = list(map(decode, items))
            # A row without a revert token holds SQL NULL; one with a null token, JSON null.
            tokens = [None if token is None else decode(token) for token in tokens]
            extras = list(map(decode, extras))
        times = self.aware_times([row[1] for row in found])
        return [
            {
                "seq": row[0],
                "committed_at": at,
                "item_type": row[2],
                "item": item,
                "item_id": row[4],
                "turn_id": row[5],
                "provider_message_id": row[6],
                "provider_timeline_item_id": row[7],
                "revert_token": token,
                "extra": extra,
                "revision": row[10],
            }
            for row, item, token, extra, at in zip(found, items, tokens, extras, times, strict=True)
        ]

    def aware_times(self, values: list) -> list[dt.datetime]:
        """The ``committed_at_column`` values as aware datetimes."""
        raise NotImplementedError


#: Appended to a UTC time's text, it parses aware (to ``datetime.UTC``) in the same C call:
#: setting the zone afterwards with ``replace`` cost ten times the parse.
UTC_SUFFIX = "+00:00"


class SqlitePageSql(PageSql):
    # The expression hides the column's declared type from the driver, so the text
    # comes back as stored instead of through Django's converter (the item is text as it is).
    committed_at_column = "+committed_at"
    placeholder = "?"
    #: What ``committed_at_column`` appends to the stored text ("" when it leaves it naive).
    time_suffix = ""

    def __init__(self, connection: BaseDatabaseWrapper):
        if connection.timezone is dt.UTC:
            # Django stores SQLite datetimes as naive text in the connection's zone (UTC unless configured).
            self.committed_at_column = f"committed_at || '{UTC_SUFFIX}'"
            self.time_suffix = UTC_SUFFIX
        super().__init__(connection)

    def aware_times(self, values: list) -> list[dt.datetime]:
        if self.time_suffix:
            try:
                # The usual text, aware as it comes, in one C call per row.
                return list(map(dt.datetime.fromisoformat, values))
            except ValueError:
                pass  # text in another form (written by hand, or older): read as Django's converter would
        return [self.aware_time(value) for value in values]

    def aware_time(self, text: str) -> dt.datetime:
        """``committed_at`` from any text Django's converter accepts, in the connection's zone unless it says its own."""
        text = text.removesuffix(self.time_suffix) if self.time_suffix else text
        try:
            at = dt.datetime.fromisoformat(text)
        except ValueError:
            at = parse_datetime(text)
        zone = self.connection.timezone
        return at.replace(tzinfo=zone) if at.tzinfo is None and zone is not None else at


class PostgresPageSql(PageSql):
    # The time as the column itself: on the driver's cursors rows come back in binary,
    # where psycopg's own C loader makes it an aware datetime (in the session's zone,
    # UTC as Django sets it) from eight bytes; the server formatting it as text
    # (to_char) cost about as much server CPU as reading the rows. On Django's cursors
    # (queries recorded) Django's text loader makes the same datetime.
    committed_at_column = "committed_at"
    # As text in either format: what the API writes out as it is.
    item_column = "item::text"
    json_columns = "revert_token::text, COALESCE(extra::text, '{}')"

    def driver_cursor(self, raw_connection) -> Any:
        # The statements' text never changes: the values go apart from it, as the
        # append's do (timeline/writes/append_sql.py), instead of being quoted into it.
        import psycopg

        return psycopg.Cursor(raw_connection)

    def execute(self, cursor, texts: dict[str, str] | None, sql: str, params: tuple) -> None:
        if texts is None:
            cursor.execute(sql, params)
        else:
            # Rows in binary; prepared at once where the connection prepares statements.
            cursor.execute(texts[sql], params, binary=True, prepare=True)

    def _page_sql(self, bound: str, order: str) -> str:
        # The conversions sit outside the LIMIT, so they run on the page's rows only
        # whatever plan the planner picks: without statistics (a freshly loaded table)
        # it may sort the whole history, and would convert every row of it first.
        # (On SQLite the same shape costs a temporary B-tree, and conversions are cheap.)
        columns = self.columns()
        page = (
            f"SELECT seq, committed_at, item_type, item, {PLAIN_COLUMNS}, revert_token, extra, revision "
            f"FROM {TimelineRow._meta.db_table} "
            f"WHERE agent_id = %s{bound} ORDER BY {order} LIMIT %s"
        )
        return f"SELECT {columns} FROM ({page}) AS page ORDER BY {order}"

    def agent_and_rows(
        self, agent_id: str, direction: Direction, seq: int | None, limit: int, *, decode_items: bool
    ) -> tuple[tuple[int, int, str, int, bool] | None, list[dict] | None]:
        # A round trip is most of a page read's time here: when the rows do not
        # depend on the agent's row (a tail, or an explicit cursor), both
        # statements go out in one pipeline.
        if direction != "tail" and seq is None:
            return super().agent_and_rows(agent_id, direction, seq, limit, decode_items=decode_items)
        with self._cursors(2) as ((agents, rows), texts), self.connection.connection.pipeline():
            self.execute(agents, texts, self.agent_sql, (agent_id,))
            self._send_rows(rows, texts, agent_id, direction, seq, limit)
            return agents.fetchone(), self._received_rows(rows, direction, decode_items)

    def aware_times(self, values: list) -> list[dt.datetime]:
        return values  # datetimes already, from the driver's loader


PAGE_SQL_CLASSES: dict[str, type[PageSql]] = {"sqlite": SqlitePageSql, "postgresql": PostgresPageSql}


def page_sql(alias: str = DEFAULT_DB_ALIAS) -> PageSql:
    """The page statements of the current connection for ``alias`` (one per thread, as connections are)."""
    connection = connections[alias]
    found = getattr(connection, "_chartr_page_sql", None)
    if found is None:
        page_sql_class = for_engine(connection, PAGE_SQL_CLASSES, unsupported="Timeline pages support")
        found = connection._chartr_page_sql = page_sql_class(connection)
    return found
