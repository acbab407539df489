"""Fresh planner statistics for the timeline table after a bulk load: one small class per engine.

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
from django.db.backends.base.base import BaseDatabaseWrapper

from kernel.engines import for_engine
from timeline.models import TimelineRow


class PlannerStatistics:
    """What an engine does to its statistics after many rows were loaded at once: nothing by default."""

    def refresh(self, connection: BaseDatabaseWrapper, tables: list[str]) -> None:
        pass


class PostgresPlannerStatistics(PlannerStatistics):
    def refresh(self, connection: BaseDatabaseWrapper, tables: list[str]) -> None:
        # Samples at most 300 × default_statistics_target rows per table, whatever its size.
        with connection.cursor() as cursor:
            for table in tables:
                cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


PLANNER_STATISTICS_CLASSES: dict[str, type[PlannerStatistics]] = {"postgresql": PostgresPlannerStatistics}


def refresh_timeline_statistics(*, using: str = DEFAULT_DB_ALIAS) -> None:
    """Bring the planner's statistics of the timeline table up to date, after a bulk load."""
    connection = connections[using]
    statistics = for_engine(connection, PLANNER_STATISTICS_CLASSES, default=PlannerStatistics)()
    statistics.refresh(connection, [TimelineRow._meta.db_table])
