"""Fresh planner statistics for the timeline table after a bulk load.

PostgreSQL plans a page read from the table's statistics, which autovacuum's
``ANALYZE`` refreshes only some time after a load. Until then, on a freshly
loaded table, the planner may read an agent's whole history through
``timeline_agent_type_idx`` and sort it, instead of reading the newest rows off
the (agent, seq) index: 7 ms of database time for the newest 100 of 10k rows
(docs/benchmarks.md). SQLite keeps no statistics unless asked and
its planner already takes the (agent, seq) index, so there nothing is done.
"""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connections

from kernel.engines import for_engine
from timeline.models import TimelineRow


def refresh_timeline_statistics(*, using: str = DEFAULT_DB_ALIAS) -> None:
    """Bring the planner's statistics of the timeline table up to date, after a bulk load."""
    connection = connections[using]
    if for_engine(connection, {"postgresql": True}, default=False):
        # Samples at most 300 × default_statistics_target rows, whatever the table's size.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(TimelineRow._meta.db_table)}")
