"""The agents' growth counters: kept by the services in the rows' own transaction, checked by check_counters."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from datadir.services import restore_snapshot, take_snapshot
from registry.services import archive_workspace
from tests.factories import AgentFactory, WorkspaceFactory
from timeline.items import item_bytes
from timeline.models import TimelineHead, TimelineRow
from timeline.services import NewTimelineItem, PendingRow, append_timeline_items, bulk_append_timeline_rows
from timeline.writes.counters import check_counters

pytestmark = pytest.mark.django_db


def truth(agent_id: str) -> tuple[int, int]:
    """The counters' meaning, computed the slow way: COUNT(*) and the items' sizes."""
    items = list(TimelineRow.objects.filter(agent_id=agent_id).values_list("item", flat=True))
    return len(items), sum(item_bytes(item) for item in items)


def counters(agent_id: str) -> tuple[int, int]:
    return TimelineHead.objects.values_list("committed_rows", "committed_bytes").get(pk=agent_id)


def say(text: str, item_id: str | None = None) -> NewTimelineItem:
    return NewTimelineItem(item={"type": "user_message", "text": text}, item_id=item_id)


def test_appends_move_the_counters_and_idempotent_retries_do_not():
    AgentFactory(agent_id="a1")
    append_timeline_items(agent_id="a1", items=[say("héllo", "i1"), say("wörld " * 50, "i2")])
    assert counters("a1") == truth("a1") and counters("a1")[0] == 2
    append_timeline_items(agent_id="a1", items=[say("héllo", "i1"), say("wörld " * 50, "i2")])
    assert counters("a1") == truth("a1") and counters("a1")[0] == 2
    append_timeline_items(agent_id="a1", items=[say("héllo", "i1"), say("new", "i3")])
    assert counters("a1") == truth("a1") and counters("a1")[0] == 3


def test_the_bulk_path_the_importer_uses_moves_them_too():
    AgentFactory(agent_id="a1")
    now = timezone.now()
    rows = [
        PendingRow(item={"type": "reasoning", "text": "x" * n}, item_type="reasoning", item_id=None, committed_at=now)
        for n in range(1, 12)
    ]
    bulk_append_timeline_rows(agent_id="a1", rows=rows, batch_size=4)
    assert counters("a1") == truth("a1") == (11, sum(item_bytes(r.item) for r in rows))


def test_the_api_shows_them_on_agents_and_summed_on_workspaces_and_projects(api):
    workspace = WorkspaceFactory()
    other = WorkspaceFactory(project=workspace.project)
    AgentFactory(workspace=workspace, agent_id="a1")
    AgentFactory(workspace=workspace, agent_id="a2")
    AgentFactory(workspace=other, agent_id="a3")
    append_timeline_items(agent_id="a1", items=[say("one"), say("two")])
    append_timeline_items(agent_id="a3", items=[say("three")])
    archive_workspace(workspace=other)  # archived agents still hold their history
    agent = api.get("/api/v1/agents/a1").json()
    assert (agent["timeline_rows"], agent["timeline_bytes"]) == truth("a1")
    rows = [truth(a) for a in ("a1", "a2", "a3")]
    expected_project = {"agents": 3, "timeline_rows": 3, "timeline_bytes": sum(b for _, b in rows)}
    assert api.get(f"/api/v1/projects/{workspace.project_id}").json()["stats"] == expected_project
    ws = api.get(f"/api/v1/workspaces/{workspace.pk}").json()["stats"]
    assert ws == {"agents": 2, "timeline_rows": 2, "timeline_bytes": rows[0][1]}
    listed = api.get("/api/v1/workspaces?archived=all").json()["results"]
    assert {w["id"]: w["stats"]["agents"] for w in listed} == {workspace.pk: 2, other.pk: 1}


class TestCheckCounters:
    def test_finds_and_repairs_drift_and_is_quiet_when_all_match(self):
        AgentFactory(agent_id="a1")
        AgentFactory(agent_id="a2")
        append_timeline_items(agent_id="a1", items=[say("one"), say("two")])
        assert check_counters(repair=False) == []
        TimelineHead.objects.filter(pk="a1").update(committed_rows=7, committed_bytes=1)
        out = io.StringIO()
        call_command("check_counters", "--dry-run", stdout=out)
        assert f"a1: rows 7 -> 2, bytes 1 -> {truth('a1')[1]}" in out.getvalue()
        assert counters("a1") == (7, 1), "a dry run repairs nothing"
        out = io.StringIO()
        call_command("check_counters", stdout=out)
        assert "(repaired)" in out.getvalue() and "Repaired the counters of 1 agent(s)." in out.getvalue()
        assert counters("a1") == truth("a1")
        out = io.StringIO()
        call_command("check_counters", stdout=out)
        assert out.getvalue() == "All agent counters match their timelines.\n"


@pytest.mark.django_db(transaction=True)
def test_a_restore_brings_back_counters_that_match_its_rows(data_dir):
    AgentFactory(agent_id="a1")
    append_timeline_items(agent_id="a1", items=[say("before")])
    snapshot = take_snapshot()
    append_timeline_items(agent_id="a1", items=[say("after"), say("the snapshot")])
    restore_snapshot(name=snapshot.name)
    assert counters("a1") == truth("a1") == (1, item_bytes({"type": "user_message", "text": "before"}))


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_counters_from_existing_rows():
    AgentFactory(agent_id="a1")
    append_timeline_items(agent_id="a1", items=[say("one"), say("twö")])
    expected = truth("a1")
    executor = MigrationExecutor(connection)
    executor.migrate([("timeline", "0001_initial"), ("snapshots", "0005_agent_last_seen_at")])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert counters("a1") == expected
