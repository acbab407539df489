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

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from kernel.engines import for_engine
from timeline.search.base import TimelineSearch
from timeline.search.postgresql import PostgreSQLTimelineSearch
from timeline.search.sqlite import SQLiteTimelineSearch

#: Connection vendor -> the class searching it.
SEARCH_BACKENDS = {"sqlite": SQLiteTimelineSearch, "postgresql": PostgreSQLTimelineSearch}


def timeline_search(connection: BaseDatabaseWrapper | None = None) -> TimelineSearch:
    """The search of ``connection``'s engine (default: the default database's)."""
    if connection is None:
        connection = connections[DEFAULT_DB_ALIAS]
    return for_engine(connection, SEARCH_BACKENDS, unsupported="Timeline search supports")(connection)
