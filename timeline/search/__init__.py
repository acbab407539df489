"""Text search within an agent's timeline: one ``TimelineSearch`` class per database engine.

The selectors (``timeline.selectors.find_match``, and ``fleet.py``'s search of
every agent's timeline at once), the append service's index
hook and the migration that builds the index all go through
``timeline_search()``, so each engine's way of searching lives in one class
(``base.py`` says what every engine provides):

* PostgreSQL (``postgresql.py``): full-text search over an expression GIN
  index, nothing to maintain;
* SQLite (``sqlite.py``): an FTS5 table the append service fills in batches
  (every search reads the rows not yet indexed itself), and a trigger empties
  as rows are deleted.
"""

from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.module_loading import import_string

from kernel.engines import for_engine
from timeline.search.base import TimelineSearch

#: Connection vendor -> the class searching it.
SEARCH_BACKENDS = {
    "sqlite": "timeline.search.sqlite.SQLiteTimelineSearch",
    "postgresql": "timeline.search.postgresql.PostgreSQLTimelineSearch",
}


def timeline_search(connection: BaseDatabaseWrapper | None = None) -> TimelineSearch:
    """The search of ``connection``'s engine (default: the default database's)."""
    if connection is None:
        connection = connections[DEFAULT_DB_ALIAS]
    return _backend_class(for_engine(connection, SEARCH_BACKENDS, unsupported="Timeline search supports"))(connection)


@cache
def _backend_class(path: str) -> type[TimelineSearch]:
    """Imported once per engine: every append asks for its engine's search."""
    return import_string(path)
