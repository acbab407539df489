"""The append's SQL, built once per database engine and run on the driver's own cursor.

The append core (``timeline.services``) sends the same few statements on every
call: lock the agent's timeline head, look up the item ids, insert the rows,
write the head back. Building their text from the models' metadata and going through Django's
cursor wrapper on each call cost more CPU than the statements themselves, so
each engine's texts are built once (``append_sql``) and sent on the DB-API
cursor of the connection, inside ``wrap_database_errors`` so that errors are
Django's as before. When Django is recording queries (``DEBUG``, a test's
``CaptureQueriesContext``) or an ``execute_wrapper`` is installed, statements
go through Django's cursor instead, so they are seen as every other query is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import psycopg
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg.types.json import Jsonb

from kernel.engines import for_engine
from snapshots.models import AgentSnapshot
from timeline.models import ROW_FIELDS, TimelineHead, TimelineRow

#: The ``TimelineHead`` columns an append reads under its lock and writes back, in ``AgentHead`` order
#: (timeline.writes.head).
HEAD_COLUMNS = ("head_seq", "min_seq", "epoch", "last_activity_at", "last_user_message_at")
#: The growth counters an append adds to (``AgentHead.added_rows`` and ``added_bytes``).
COUNTER_COLUMNS = ("committed_rows", "committed_bytes")
#: The columns of an inserted timeline row, in the order ``AppendSQL.insert_row`` takes them.
ROW_COLUMNS = ("agent", *ROW_FIELDS)


class Statement:
    """One statement: its text for Django's cursor (``%s``) and for the driver's own paramstyle.

    ``cursor_class`` makes the driver's cursor (default: the connection's own).
    """

    __slots__ = ("cursor_class", "driver_sql", "sql")
    #: Keywords for the driver cursor's ``execute`` of one set of values.
    execute_options: dict[str, Any] = {}

    def __init__(self, sql: str, *, placeholder: str, cursor_class: Callable[[Any], Any] | None = None):
        self.sql = sql
        self.driver_sql = sql if placeholder == "%s" else sql.replace("%s", placeholder)
        self.cursor_class = cursor_class

    def _run(self, connection: BaseDatabaseWrapper, params: Sequence[Any], fetch: str | None, many: bool) -> Any:
        if connection.queries_logged or connection.execute_wrappers:
            with connection.cursor() as cursor:
                (cursor.executemany if many else cursor.execute)(self.sql, params)
                return getattr(cursor, fetch)() if fetch else None
        with connection.wrap_database_errors:
            return self._run_on_driver(connection, params, fetch, many)

    def _run_on_driver(self, connection: BaseDatabaseWrapper, params: Sequence[Any], fetch: str | None, many: bool):
        cursor = _driver_cursor(connection, self.cursor_class)
        if many:
            cursor.executemany(self.driver_sql, params)
        else:
            cursor.execute(self.driver_sql, params, **self.execute_options)
        return getattr(cursor, fetch)() if fetch else None

    def execute(self, params: Sequence[Any], *, connection: BaseDatabaseWrapper) -> None:
        self._run(connection, params, None, False)

    def executemany(self, params: Sequence[Sequence[Any]], *, connection: BaseDatabaseWrapper) -> None:
        self._run(connection, params, None, True)

    def fetchone(self, params: Sequence[Any], *, connection: BaseDatabaseWrapper) -> tuple | None:
        return self._run(connection, params, "fetchone", False)

    def fetchall(self, params: Sequence[Any], *, connection: BaseDatabaseWrapper) -> list[tuple]:
        return self._run(connection, params, "fetchall", False)


def _driver_cursor(connection: BaseDatabaseWrapper, cursor_class: Callable[[Any], Any] | None) -> Any:
    """A driver cursor on ``connection``'s current DB-API connection, kept for the next
    statement: making one took a tenth of a PostgreSQL append's CPU. The connection is opened
    first when this thread has not used it yet (a read whose first statement is this one)."""
    connection.ensure_connection()
    raw = connection.connection
    kept = connection.__dict__.setdefault("_chartr_statement_cursors", {})
    cursor = kept.get(cursor_class)
    if cursor is None or cursor.connection is not raw or getattr(cursor, "closed", False):
        cursor = kept[cursor_class] = raw.cursor() if cursor_class is None else cursor_class(raw)
    return cursor


class PostgreSQLStatement(Statement):
    """A statement on psycopg's own cursor (values bound on the server), prepared on the
    server the first time it runs where the connection prepares statements at all
    (``prepare_threshold`` in OPTIONS; Django's default, None, prepares nothing, for
    connection poolers in transaction mode)."""

    __slots__ = ()
    execute_options = {"prepare": True}

    def __init__(self, sql: str):
        super().__init__(sql, placeholder="%s", cursor_class=psycopg.Cursor)


class AppendSQL:
    """The append's statements for one engine. ``lock_suffix`` locks the timeline's head
    row where the engine has row locks; ``placeholder`` is the driver's paramstyle."""

    lock_suffix = ""
    placeholder = "%s"

    def __init__(self, quote_name):
        agent_meta, head_meta, row_meta = AgentSnapshot._meta, TimelineHead._meta, TimelineRow._meta
        agent_table, head_table = quote_name(agent_meta.db_table), quote_name(head_meta.db_table)
        row_table = quote_name(row_meta.db_table)

        def head(name: str) -> str:
            return quote_name(head_meta.get_field(name).column)

        def row(name: str) -> str:
            return quote_name(row_meta.get_field(name).column)

        self._row = row
        self._row_table = row_table
        agent_id, archived_at = quote_name(agent_meta.pk.column), quote_name(agent_meta.get_field("archived_at").column)
        columns = ", ".join([*(f"h.{head(name)}" for name in HEAD_COLUMNS), f"a.{archived_at}"])
        self.lock_agent = self.statement(
            f"SELECT {columns} FROM {agent_table} a JOIN {head_table} h ON h.{head('agent')} = a.{agent_id} "
            f"WHERE a.{agent_id} = %s{self.lock_suffix}"
        )

        def save_head(head_columns: tuple[str, ...]) -> Statement:
            assignments = [f"{head(name)} = %s" for name in head_columns]
            assignments += [f"{head(name)} = {head(name)} + %s" for name in COUNTER_COLUMNS]
            return self.statement(f"UPDATE {head_table} SET {', '.join(assignments)} WHERE {head('agent')} = %s")

        #: Takes the ``HEAD_COLUMNS`` values, the two counter increments, the agent id.
        self.save_head = save_head(HEAD_COLUMNS)
        #: The same with ``last_appended_at`` after the head columns: an append by the agent itself.
        self.save_head_alive = save_head((*HEAD_COLUMNS, "last_appended_at"))
        row_columns = ", ".join(row(name) for name in ROW_COLUMNS)
        self._insert_into = f"INSERT INTO {row_table} ({row_columns}) VALUES "
        self.insert_row = self.statement(self._insert_into + _row_values(1))

    def statement(self, sql: str) -> Statement:
        return Statement(sql, placeholder=self.placeholder)

    #: Whether ``insert_rows_and_save_head`` has a statement (else the rows and the head go apart).
    inserts_rows_and_saves_head = False

    def insert_rows_and_save_head(self, count: int, *, alive: bool, notify: bool) -> Statement:
        """One statement inserting ``count`` rows and then writing the head back (the
        ``insert_row`` values of each row, then ``save_head``'s or ``save_head_alive``'s),
        and with ``notify`` sending ``pg_notify`` (its channel and payload last)."""
        raise NotImplementedError

    @staticmethod
    def item_param(db: BaseDatabaseWrapper, item: dict, encoded: str | None) -> Any:
        """The ``item`` column's parameter: the JSON field's own (``encoded``, the item's
        compact JSON, is not the form this engine keeps: SQLite stores the text as sent,
        and the API passes it through)."""
        return _item_field.get_db_prep_save(item, db)

    @staticmethod
    def json_text_param(db: BaseDatabaseWrapper, text: str | None) -> Any:
        """A JSON column's parameter from its JSON text (None: SQL NULL), so that a JSON
        ``null`` is stored as one (the JSON field's own would make it SQL NULL)."""
        return text

    @cache  # noqa: B019 - one instance per engine, kept for the process's life anyway
    def committed_item_ids(self, count: int) -> Statement:
        """Which of ``count`` item ids (after the agent id) the agent has committed."""
        row = self._row
        return self.statement(
            f"SELECT {row('item_id')} FROM {self._row_table} WHERE {row('agent')} = %s "
            f"AND {row('item_id')} IN ({', '.join(['%s'] * count)})"
        )


class SQLiteAppendSQL(AppendSQL):
    # No row locks: every transaction is IMMEDIATE, so it already holds the write lock.
    placeholder = "?"


class PostgreSQLAppendSQL(AppendSQL):
    # The head is the row an append moves: FOR UPDATE serialises appends to one agent.
    # The agent row is read for its archive state under FOR KEY SHARE, which a plain
    # UPDATE of it (a heartbeat: FOR NO KEY UPDATE) never waits for, while the services
    # locking it FOR UPDATE (update, archive) or a delete wait for the append, and it for them.
    # The agent is named first, so it is locked first: the order a delete takes them
    # in too (the agent, then its head by the cascade), so the two cannot deadlock.
    lock_suffix = " FOR KEY SHARE OF a FOR UPDATE OF h"

    def statement(self, sql: str) -> Statement:
        return PostgreSQLStatement(sql)

    inserts_rows_and_saves_head = True

    @cache  # noqa: B019 - one instance per engine; at most 4 x MAX_ITEMS_PER_APPEND texts
    def insert_rows_and_save_head(self, count: int, *, alive: bool, notify: bool) -> Statement:
        # A data-modifying WITH runs its INSERT to completion, with every constraint
        # checked as on its own, and saves the round trip of a second statement. The
        # UPDATE meets exactly the agent's head row (locked): its RETURNING sends the
        # live hub's NOTIFY once, inside the transaction, saving a third.
        save_head = self.save_head_alive if alive else self.save_head
        returning = " RETURNING pg_notify(%s, %s)" if notify else ""
        return self.statement(f"WITH inserted AS ({self._insert_into}{_row_values(count)}) {save_head.sql}{returning}")

    @staticmethod
    def item_param(db: BaseDatabaseWrapper, item: dict, encoded: str | None) -> Any:
        # jsonb keeps no text: the compact JSON already made for the size check is parsed
        # to the same value, and psycopg need not encode the item again.
        if encoded is None:
            return _item_field.get_db_prep_save(item, db)
        return Jsonb(encoded, dumps=_as_sent)

    @staticmethod
    def json_text_param(db: BaseDatabaseWrapper, text: str | None) -> Any:
        return None if text is None else Jsonb(text, dumps=_as_sent)


def row_params(
    db: BaseDatabaseWrapper,
    *,
    agent_id: str,
    first_seq: int,
    rows: Sequence[Any],
    adapt_datetime: Callable[[Any], Any] | None = None,
) -> list[tuple]:
    """The ``insert_row`` values of ``rows`` (``timeline.services.CheckedRow``) as seq first_seq,
    first_seq+1, ..., adapted by the same field and backend methods the ORM uses
    (``adapt_datetime``: the backend's, or one that remembers what it adapted)."""
    adapt_datetime = adapt_datetime or db.ops.adapt_datetimefield_value
    statements = append_sql(db)
    item_param, json_text_param = statements.item_param, statements.json_text_param
    return [
        (
            agent_id,
            seq,
            adapt_datetime(row.committed_at),
            row.item_type,
            item_param(db, row.item, getattr(row, "item_json", None)),
            row.item_id,
            # Only carried-over histories know their turns and Paseo's other row keys.
            getattr(row, "turn_id", None),
            getattr(row, "provider_message_id", None),
            getattr(row, "provider_timeline_item_id", None),
            json_text_param(db, getattr(row, "revert_token_json", None)),
            json_text_param(db, getattr(row, "extra_json", None)),
        )
        for seq, row in enumerate(rows, first_seq)
    ]


_item_field = TimelineRow._meta.get_field("item")


def _as_sent(text: str) -> str:
    """psycopg's ``dumps`` for JSON text already encoded."""
    return text


def _row_values(count: int) -> str:
    """``count`` rows of ``ROW_COLUMNS`` placeholders, for a VALUES list."""
    row = "(" + ", ".join(["%s"] * len(ROW_COLUMNS)) + ")"
    return ", ".join([row] * count)


_ENGINES = {"sqlite": SQLiteAppendSQL, "postgresql": PostgreSQLAppendSQL}


_built: dict[str, AppendSQL] = {}


def append_sql(connection: BaseDatabaseWrapper) -> AppendSQL:
    """The statements for ``connection``'s engine, built the first time they are asked for."""
    statements = _built.get(connection.vendor)
    if statements is None:
        statements = _built[connection.vendor] = for_engine(connection, _ENGINES, default=AppendSQL)(
            connection.ops.quote_name
        )
    return statements
