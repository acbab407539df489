"""SQLite: an FTS5 table holding each row's text, keyed by the row's id.

``timeline_row_search(body)`` has one entry per timeline row, its ``rowid``
the row's ``id``. The append service fills it in the transaction that inserts
the rows (``index_rows``, one ``INSERT ... SELECT`` per batch); a trigger
removes entries as rows are deleted (an agent's delete cascades in the
database, and no service sees it). The text is computed in SQL with
``json_tree``, the same "every string value" PostgreSQL indexes.

The entries store the text (a contentless table could not delete entries on
this SQLite without their original text), so the index costs about as much
disk as the items' text itself.
"""

from __future__ import annotations

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from timeline.append_sql import Statement
from timeline.search.base import TimelineSearch

TABLE = "timeline_row_search"
DELETE_TRIGGER = "timeline_row_search_forget"
#: The words of a row ``r``: its item's string values.
_ROW_TEXT = "(SELECT group_concat(j.value, ' ') FROM json_tree(r.item) AS j WHERE j.type = 'text')"
#: Run by every append, so built once and sent on the driver's cursor.
_INDEX_ROWS = Statement(
    f"INSERT INTO {TABLE}(rowid, body) SELECT r.id, {_ROW_TEXT} FROM timeline_timelinerow r "
    "WHERE r.agent_id = %s AND r.seq BETWEEN %s AND %s",
    placeholder="?",
)


class SQLiteTimelineSearch(TimelineSearch):
    def create_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        schema_editor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5(body, tokenize='unicode61')")
        schema_editor.execute(
            f"CREATE TRIGGER IF NOT EXISTS {DELETE_TRIGGER} AFTER DELETE ON timeline_timelinerow "
            f"BEGIN DELETE FROM {TABLE} WHERE rowid = old.id; END"
        )
        schema_editor.execute(f"INSERT INTO {TABLE}(rowid, body) SELECT r.id, {_ROW_TEXT} FROM timeline_timelinerow r")

    def drop_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {DELETE_TRIGGER}")
        schema_editor.execute(f"DROP TABLE IF EXISTS {TABLE}")

    def index_rows(self, *, agent_id: str, first_seq: int, last_seq: int) -> None:
        _INDEX_ROWS.execute([agent_id, first_seq, last_seq], connection=self.connection)

    def filter_matches(self, rows: QuerySet, terms: list[list[str]]) -> QuerySet:
        # Every term quoted: FTS5 reads a quoted string as a phrase and never as
        # its query syntax, so no input can be an FTS5 syntax error.
        fts_query = " AND ".join('"' + " ".join(words) + '"' for words in terms)
        matching_ids = RawSQL(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH %s", [fts_query])
        return rows.filter(id__in=matching_ids)
