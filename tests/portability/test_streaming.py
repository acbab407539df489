"""The export reads in bounded pages, never a whole table; the import inserts rows in batches."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portability import selectors, services
from portability.export import write_instance_to
from registry.models import Project
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, WorkspaceFactory
from timeline.models import TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db


def _rows_table_reads(queries) -> list[str]:
    table = TimelineRow._meta.db_table
    return [q["sql"] for q in queries if q["sql"].startswith("SELECT") and f'"{table}"' in q["sql"].split(" WHERE")[0]]


def test_the_export_reads_rows_and_records_in_pages(monkeypatch):
    monkeypatch.setattr(selectors, "ROW_PAGE", 10)
    monkeypatch.setattr(selectors, "RECORD_PAGE", 3)
    workspace = WorkspaceFactory()
    for n in range(7):
        AgentFactory(workspace=workspace, agent_id=f"a{n}")
    items = [NewTimelineItem(item={"type": "user_message", "text": str(n)}) for n in range(25)]
    append_timeline_items(agent_id="a0", items=items)

    out = io.StringIO()
    with CaptureQueriesContext(connection) as captured:
        counts = write_instance_to(out)

    assert counts["row"] == 25 and counts["agent"] == 7
    row_reads = [sql for sql in _rows_table_reads(captured.captured_queries) if "COUNT(" not in sql]
    # a0's 25 rows in pages of 10 (10, 10, 5): three reads, each bounded; the empty timelines read none.
    assert len(row_reads) == 3 and all(re.search(r"LIMIT 10\b", sql) for sql in row_reads), row_reads
    agent_table = AgentSnapshot._meta.db_table
    agent_reads = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith("SELECT") and f'FROM "{agent_table}"' in q["sql"] and "COUNT(" not in q["sql"]
    ]
    # Twice over the 7 agents (their records, then their timelines), 3 a page: 3 pages each, and a last empty one.
    assert len(agent_reads) == 2 * 4 and all(re.search(r"LIMIT 3\b", sql) for sql in agent_reads), agent_reads


def test_the_import_inserts_rows_in_batches(monkeypatch, tmp_path):
    workspace = WorkspaceFactory()
    AgentFactory(workspace=workspace, agent_id="long")
    append_timeline_items(
        agent_id="long", items=[NewTimelineItem(item={"type": "user_message", "text": str(n)}) for n in range(23)]
    )
    path = tmp_path / "instance.jsonl"
    call_command("export_instance", str(path))
    Project.objects.all().delete()

    monkeypatch.setattr(services, "ROW_BATCH", 5)
    batches = []
    real = services.carry_over_timeline

    def counting(**kwargs):
        return real(**{**kwargs, "on_batch": lambda n: (batches.append(n), kwargs["on_batch"](n))})

    monkeypatch.setattr(services, "carry_over_timeline", counting)
    call_command("import_instance", str(path))
    assert batches == [5, 5, 5, 5, 3]
    assert TimelineRow.objects.filter(agent_id="long").count() == 23
