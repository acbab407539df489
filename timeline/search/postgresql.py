"""PostgreSQL: full-text search over an expression GIN index.

The index is on ``jsonb_to_tsvector('simple', item, '["string"]')``: every
string value of the item, without stemming (the ``simple`` configuration),
so PostgreSQL keeps it up to date itself and ``index_rows`` has nothing to do.
Queries use the very same expression, which is what lets the planner use the
index.
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVectorField
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import BigIntegerField, ExpressionWrapper, F, Func, QuerySet

from timeline.search.base import TimelineSearch

INDEX_NAME = "timeline_item_text_search"
#: Written out, not parameterised: the query's expression must equal the index's.
_ITEM_TEXT = "jsonb_to_tsvector('simple'::regconfig, {column}, '[\"string\"]'::jsonb)"


class ItemText(Func):
    """The item's words, as the index stores them."""

    template = _ITEM_TEXT.format(column="%(expressions)s")
    output_field = SearchVectorField()


class PostgreSQLTimelineSearch(TimelineSearch):
    def create_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX_NAME} ON timeline_timelinerow "
            f"USING gin (({_ITEM_TEXT.format(column='item')}))"
        )

    def drop_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")

    def index_rows(self, *, rows: int, item_bytes: int | None = None) -> None:
        """Nothing: an expression index is maintained by PostgreSQL."""

    def index_backlog(self) -> None:
        """Nothing: the expression index never lags the rows."""

    def filter_matches(self, rows: QuerySet, terms: list[list[str]]) -> QuerySet:
        # Every term quoted: websearch_to_tsquery reads "a b" as a phrase, terms
        # side by side as AND, and a quoted "or" as a word, not the operator.
        text = " ".join('"' + " ".join(words) + '"' for words in terms)
        query = SearchQuery(text, config="simple", search_type="websearch")
        return rows.annotate(item_text=ItemText(F("item"))).filter(item_text=query)

    def order_matches(self, matches: QuerySet, *, newest_first: bool) -> QuerySet:
        # Ordered by seq, the planner walks the agent's (agent, seq) index and tests
        # every row's text until one matches: the whole history for a rare word.
        # seq + 0 is an order no index serves, so it reads the GIN index's matches
        # and keeps the first (a top-N sort): the cost is the word's matches.
        order = ExpressionWrapper(F("seq") + 0, output_field=BigIntegerField())
        return matches.order_by(order.desc() if newest_first else order.asc())
