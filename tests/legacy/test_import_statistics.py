"""After an import that adds timeline rows, the planner's statistics of the timeline table are fresh."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from legacy.services import import_legacy
from timeline.models import TimelineRow
from timeline.reads.planner_statistics import refresh_timeline_statistics

pytestmark = pytest.mark.django_db


def analyzes(queries) -> list[str]:
    return [query["sql"] for query in queries if query["sql"].upper().startswith("ANALYZE")]


def planner_row_estimate() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [TimelineRow._meta.db_table])
        return cursor.fetchone()[0]


def test_an_import_that_adds_rows_refreshes_the_statistics_once_committed(
    quirks_home, django_capture_on_commit_callbacks
):
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True) as callbacks:
        report = import_legacy(source=quirks_home.root)
        assert not analyzes(queries)  # not before the commit
    assert report.counts["timeline_rows"].created == 8
    assert callbacks.count(refresh_timeline_statistics) == 1
    if connection.vendor == "postgresql":
        assert analyzes(queries) == ['ANALYZE "timeline_timelinerow"']
        assert planner_row_estimate() == TimelineRow.objects.count() == 8
    else:
        assert not analyzes(queries)  # SQLite keeps no statistics it was not asked for


def test_a_dry_run_or_an_import_adding_no_rows_leaves_them_alone(quirks_home, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        import_legacy(source=quirks_home.root, dry_run=True)
    assert refresh_timeline_statistics not in callbacks
    import_legacy(source=quirks_home.root)
    with django_capture_on_commit_callbacks() as callbacks:
        again = import_legacy(source=quirks_home.root)
    assert again.counts["timeline_rows"].created == 0
    assert refresh_timeline_statistics not in callbacks
