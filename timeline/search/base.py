"""What a database engine provides for searching timeline rows.

"The text of a row" is every string value anywhere in its item (keys and
numbers are not text), split into words the same way on both engines:
lower-cased, on Unicode word boundaries, without stemming, so a word matches
the same rows on SQLite and PostgreSQL. A query is a list of words, all of
which must occur; ``"quoted words"`` must occur together, in that order.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import QuerySet

#: A search is refused past this many characters: a query is a few words, not a document.
MAX_QUERY_LENGTH = 200

_WORD = re.compile(r"\w+", re.UNICODE)
_PHRASE_OR_WORD = re.compile(r'"([^"]*)"|(\S+)')


def query_terms(query: str) -> list[list[str]]:
    """``query`` as terms, each a list of words (a phrase when it has more than one).

    Punctuation separates words, as it does in the indexed text, so
    ``foo.bar`` is the phrase ``foo bar`` on both engines.
    """
    terms: list[list[str]] = []
    for phrase, word in _PHRASE_OR_WORD.findall(query[:MAX_QUERY_LENGTH]):
        words = [w.lower() for w in _WORD.findall(phrase or word)]
        if words:
            terms.append(words)
    return terms


class TimelineSearch(ABC):
    """One engine's text search over ``timeline_timelinerow``."""

    def __init__(self, connection: BaseDatabaseWrapper):
        self.connection = connection

    @abstractmethod
    def create_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        """Build the search index, including the rows already stored (a migration runs it)."""

    @abstractmethod
    def drop_index(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        """Undo ``create_index``."""

    def reindex_row(self, row_id: int) -> None:
        """Take note that the row ``row_id`` now holds another item (``timeline.writes.revisions.update_row``),
        inside the transaction that changed it. Nothing for an index computed from the row itself."""
        return None

    @abstractmethod
    def index_rows(self, *, rows: int, item_bytes: int | None = None) -> None:
        """Take note of ``rows`` rows just inserted (one agent's, with consecutive ids), whose
        items' compact UTF-8 JSON is ``item_bytes`` long (None: not counted).

        Called by the append service inside the transaction that inserted them,
        right after their INSERT. A committed row is found by every search from
        then on: the engine indexes it now, or later in a batch and meanwhile
        makes every search read it (SQLite's ``sqlite.py`` says how).
        """

    @abstractmethod
    def index_backlog(self) -> None:
        """Index every row left for a later batch, in the current transaction."""

    @abstractmethod
    def filter_matches(self, rows: QuerySet, terms: list[list[str]]) -> QuerySet:
        """``rows`` narrowed to those whose text holds every term of ``terms`` (never empty)."""

    def order_matches(self, matches: QuerySet, *, newest_first: bool) -> QuerySet:
        """``matches`` (from ``filter_matches``) in seq order, the way this engine reads them best."""
        return matches.order_by("-seq" if newest_first else "seq")
