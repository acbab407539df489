"""SQLite: an FTS5 table holding each row's text, keyed by the row's id, filled in batches.

``timeline_row_search(body)`` has one entry per indexed timeline row, its
``rowid`` the row's ``id``. The text is computed in SQL with ``json_tree``,
the same "every string value" PostgreSQL indexes; a trigger removes entries as
rows are deleted (an agent's delete cascades in the database, and no service
sees it). The entries store the text (a contentless table could not delete
entries on this SQLite without their original text), so the index costs about
as much disk as the items' text itself.

**Indexed in batches, searched whole.** Indexing one row at a time wrote 6 of
the 18 pages an append wrote (docs/benchmarks.md), so appends leave their rows
to a backlog instead, and the index takes the backlog in one ``INSERT ...
SELECT``:

* The watermark is the index's own highest rowid (``_INDEXED_UP_TO``): every
  row whose id is at or below it is indexed, every row above it is the backlog.
  Row ids come from ``AUTOINCREMENT`` (never reused, even after the newest
  rows are deleted), writers take turns (one write transaction at a time), and
  a batch indexes the whole backlog in the transaction that reads it, so the
  rule holds at every commit. Deletes keep it too: the trigger removes an
  indexed row's entry (the watermark falls to the next indexed row, all below
  it still indexed) and ignores a backlog row's. Nothing is stored beside the
  index, so pruning, agent deletes, legacy imports, group commit's rolled-back
  savepoints and data snapshots and restores (the index and the rows are
  one database file) cannot leave a watermark behind.
* An append indexes the backlog when its rows' ids reach a multiple of
  ``INDEX_EVERY`` (known from ``last_insert_rowid()``, no query of the
  backlog), so the backlog holds fewer than ``INDEX_EVERY`` rows at every
  commit. An append with many rows (the importer's batches) crosses one and
  indexes its own rows with the backlog; so does an append whose items hold
  more than ``INDEX_AT_ONCE_CHARS`` (the service passes their size, which it
  has counted already), so no backlog row is large.
* A search sees every committed row: before it matches, it copies the text of
  the backlog (every row above the watermark, whatever its agent: at most
  ``INDEX_EVERY - 1`` rows) into a per-connection ``TEMP`` FTS5 table with the
  same tokenizer, and matches the index and that table together. A search
  writes nothing to the database: it takes no write lock, waits for no writer
  and passes no write fence. Its added cost is tokenizing those rows, at worst
  ``INDEX_EVERY - 1`` items of ``INDEX_AT_ONCE_CHARS`` each: 38-46 ms measured
  on a loaded machine, 2-6 ms for 63 rows of 200 characters (docs/benchmarks.md).

The backlog's copy and the match are two statements: a row committed between
them may be missed (it was committed after the search began), and one deleted
between them is not returned (the match joins the timeline's rows again).
"""

from __future__ import annotations

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from timeline.search.base import TimelineSearch
from timeline.writes.append_sql import Statement

TABLE = "timeline_row_search"
#: A ``TEMP`` table of the searching connection: the backlog's text during one search.
BACKLOG_TABLE = "timeline_row_search_backlog"
DELETE_TRIGGER = "timeline_row_search_forget"
#: An append indexes the backlog when its rows' ids reach a multiple of this,
INDEX_EVERY = 64
#: or when its items' compact UTF-8 JSON is longer than this many bytes (never fewer than
#: the characters of their text): a search tokenizes the backlog itself, so the backlog
#: stays under ``INDEX_EVERY`` rows of at most this much text each.
INDEX_AT_ONCE_CHARS = 8 * 1024
_TOKENIZER = "tokenize='unicode61'"
#: The words of a row ``r``: its item's string values.
_ROW_TEXT = "(SELECT group_concat(j.value, ' ') FROM json_tree(r.item) AS j WHERE j.type = 'text')"
#: The watermark: every row with an id at or below it is indexed, every row above it is not.
_INDEXED_UP_TO = f"coalesce((SELECT rowid FROM {TABLE} ORDER BY rowid DESC LIMIT 1), 0)"
#: The backlog's rows and their text (the id range is a rowid range of the timeline table).
_BACKLOG_ROWS = f"SELECT r.id, {_ROW_TEXT} FROM timeline_timelinerow r WHERE r.id > {_INDEXED_UP_TO}"

#: The id of the last row the connection inserted (the rows an append just inserted get consecutive ids).
_LAST_INSERTED_ID = Statement("SELECT last_insert_rowid()", placeholder="?")
_INDEX_BACKLOG = Statement(f"INSERT INTO {TABLE}(rowid, body) {_BACKLOG_ROWS}", placeholder="?")
#: One indexed row out of the index, and back in with its text.
_WATERMARK = Statement(f"SELECT {_INDEXED_UP_TO}", placeholder="?")
_FORGET_ROW = Statement(f"DELETE FROM {TABLE} WHERE rowid = %s", placeholder="?")
_INDEX_ROW = Statement(
    f"INSERT INTO {TABLE}(rowid, body) SELECT r.id, {_ROW_TEXT} FROM timeline_timelinerow r WHERE r.id = %s",
    placeholder="?",
)
_CREATE_BACKLOG_TABLE = Statement(
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{BACKLOG_TABLE} USING fts5(body, {_TOKENIZER})", placeholder="?"
)
_EMPTY_BACKLOG_TABLE = Statement(f"DELETE FROM temp.{BACKLOG_TABLE}", placeholder="?")
_FILL_BACKLOG_TABLE = Statement(f"INSERT INTO temp.{BACKLOG_TABLE}(rowid, body) {_BACKLOG_ROWS}", placeholder="?")
_MATCHING_IDS = (
    f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH %s "
    f"UNION ALL SELECT rowid FROM temp.{BACKLOG_TABLE} WHERE {BACKLOG_TABLE} MATCH %s"
)


def crosses_batch_boundary(last_id: int, count: int) -> bool:
    """Whether the ids ``last_id - count + 1 .. last_id`` hold a multiple of ``INDEX_EVERY``."""
    return last_id // INDEX_EVERY != (last_id - count) // INDEX_EVERY


class SQLiteTimelineSearch(TimelineSearch):
    def create_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        schema_editor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5(body, {_TOKENIZER})")
        schema_editor.execute(
            f"CREATE TRIGGER IF NOT EXISTS {DELETE_TRIGGER} AFTER DELETE ON timeline_timelinerow "
            f"BEGIN DELETE FROM {TABLE} WHERE rowid = old.id; END"
        )
        # The watermark of an empty index is 0: every stored row is the backlog.
        schema_editor.execute(_INDEX_BACKLOG.sql)

    def drop_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {DELETE_TRIGGER}")
        schema_editor.execute(f"DROP TABLE IF EXISTS {TABLE}")

    def index_rows(self, *, rows: int, item_bytes: int | None = None) -> None:
        """Index the backlog if the rows just inserted reach a multiple of ``INDEX_EVERY``
        or hold more than ``INDEX_AT_ONCE_CHARS`` (or an unknown size)."""
        if item_bytes is None or item_bytes > INDEX_AT_ONCE_CHARS:
            self.index_backlog()
            return
        (last_id,) = _LAST_INSERTED_ID.fetchone([], connection=self.connection)
        if crosses_batch_boundary(last_id, rows):
            self.index_backlog()

    def reindex_row(self, row_id: int) -> None:
        """An indexed row's text again (a row of the backlog is read as it is by every search)."""
        (indexed_up_to,) = _WATERMARK.fetchone([], connection=self.connection)
        if row_id <= indexed_up_to:
            _FORGET_ROW.execute([row_id], connection=self.connection)
            _INDEX_ROW.execute([row_id], connection=self.connection)

    def index_backlog(self) -> None:
        """Index every row above the watermark, in the current transaction."""
        _INDEX_BACKLOG.execute([], connection=self.connection)

    def filter_matches(self, rows: QuerySet, terms: list[list[str]]) -> QuerySet:
        # Every term quoted: FTS5 reads a quoted string as a phrase and never as
        # its query syntax, so no input can be an FTS5 syntax error.
        fts_query = " AND ".join('"' + " ".join(words) + '"' for words in terms)
        self._copy_backlog()
        return rows.filter(id__in=RawSQL(_MATCHING_IDS, [fts_query, fts_query]))

    def _copy_backlog(self) -> None:
        """The backlog's text into this connection's ``TEMP`` table, for the match that follows."""
        for statement in (_CREATE_BACKLOG_TABLE, _EMPTY_BACKLOG_TABLE, _FILL_BACKLOG_TABLE):
            statement.execute([], connection=self.connection)
