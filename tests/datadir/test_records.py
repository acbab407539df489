"""A snapshot keeps its projects, workspaces and agents; the restore preview and the snapshot list
say what changed in the operator's words (archived, unarchived, gone, back, timeline rows per agent)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from datadir.selectors import list_data_snapshots, restore_preview
from datadir.services import restore_snapshot, take_snapshot
from registry.models import Workspace
from registry.services import archive_workspace, unarchive_workspace
from snapshots.models import AgentSnapshot
from snapshots.services import delete_agent
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:No directory at:UserWarning"),
]


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def say(agent_id: str, *texts: str) -> None:
    items = [NewTimelineItem(item={"type": "user_message", "text": text}) for text in texts]
    append_timeline_items(agent_id=agent_id, items=items)


@pytest.fixture
def fleet(data_dir):
    """Two workspaces of project "shop", an agent in each with a few rows."""
    project = ProjectFactory(display_name="shop")
    front = WorkspaceFactory(project=project, display_name="front")
    back = WorkspaceFactory(project=project, display_name="back")
    refund = AgentFactory(workspace=front, agent_id="733b692a-0000-4000-8000-000000000001", title="Fix refund rounding")
    build = AgentFactory(workspace=back, agent_id="build-1", title="Fix the build")
    say(refund.agent_id, "a", "b", "c")
    say(build.agent_id, "x")
    return front, back, refund, build


def test_the_manifest_keeps_every_record_in_the_admins_words(fleet, data_dir):
    snap = take_snapshot()
    manifest = json.loads((data_dir / "snapshots" / snap.name / "manifest.json").read_text())
    records = manifest["records"]
    assert sorted(name for name, _ in records["workspaces"].values()) == ["back (shop)", "front (shop)"]
    assert records["agents"]["733b692a-0000-4000-8000-000000000001"] == ["Fix refund rounding · 733b692a", False, 3]
    assert records["agents"]["build-1"] == ["Fix the build · build-1", False, 1]
    assert "first snapshot" in snap.summary and "2 workspaces, 2 agents, 4 timeline rows" in snap.summary


def test_the_preview_says_what_the_restore_unarchives_removes_brings_back_and_rewinds(fleet, data_dir):
    front, back, refund, build = fleet
    snap = take_snapshot()
    archive_workspace(workspace=back)  # archives build-1 with it
    say(refund.agent_id, "d", "e")
    delete_agent(agent=AgentSnapshot.objects.get(pk="build-1"))
    AgentFactory(workspace=front, agent_id="late-1", title="Added later")
    say("late-1", "1", "2")

    preview = restore_preview(snap.name)
    assert [(r.noun, r.name) for r in preview.unarchived] == [("workspace", "back (shop)")]
    assert [(r.name, r.rows_before) for r in preview.disappearing] == [("Added later · late-1", 2)]
    assert [(r.name, r.rows_after) for r in preview.returning] == [("Fix the build · build-1", 1)]
    assert [(r.name, r.rows_before, r.rows_after) for r in preview.timelines] == [
        ("Fix refund rounding · 733b692a", 5, 3)
    ]
    assert preview.archived_again == []

    root = User.objects.create_superuser("root", password="pw-long-enough-123")
    client = Client()
    client.force_login(root)
    html = client.get(reverse("data-restore", args=[snap.name])).content.decode()
    records = html[html.index('id="restore-records"') : html.index('id="restore-counts"')]
    assert "Archived now, unarchived by the restore (1)" in records and "Workspace back (shop)" in records
    assert "Agent Added later · late-1 and its timeline (2 rows)" in records
    assert "Agent Fix the build · build-1 with its timeline (1 row)" in records
    assert "Fix refund rounding · 733b692a: 5 rows now, 3 after the restore" in records

    # The preview is what the restore does: the workspace is live again, late-1 gone, build-1 back.
    restore_snapshot(name=snap.name)
    assert Workspace.objects.get(pk=back.pk).archived_at is None
    assert set(AgentSnapshot.objects.values_list("agent_id", flat=True)) == {refund.agent_id, "build-1"}
    assert restore_preview(snap.name).records == []  # nothing left to change, asked twice alike
    assert restore_preview(snap.name).records == []


def test_the_preview_names_records_the_restore_archives_again(fleet, data_dir):
    front, back, _refund, _build = fleet
    archive_workspace(workspace=back)
    snap = take_snapshot()
    unarchive_workspace(workspace=Workspace.objects.get(pk=back.pk))
    preview = restore_preview(snap.name)
    assert ("workspace", "back (shop)") in [(r.noun, r.name) for r in preview.archived_again]
    assert ("agent", "Fix the build · build-1") in [(r.noun, r.name) for r in preview.archived_again]


def test_the_snapshot_list_says_what_changed_in_the_same_words(fleet, data_dir):
    front, back, refund, _build = fleet
    take_snapshot()
    archive_workspace(workspace=back)
    AgentFactory(workspace=front, agent_id="late-1", title="Added later")
    say(refund.agent_id, *[f"row {n}" for n in range(10)])
    second = take_snapshot()
    assert second.summary == ("1 agent added; 1 workspace archived; 1 agent archived; timeline rows +10 (1 agent)"), (
        second.summary
    )
    newest = list_data_snapshots()[0]
    assert newest.holds == "1 project, 2 workspaces (1 archived), 3 agents (1 archived), 14 timeline rows"
    changes = (data_dir / "snapshots" / second.name / "changes.txt").read_text()
    assert "workspace back (shop) archived" in changes
    assert "agent Fix refund rounding · 733b692a: timeline rows 3 -> 13" in changes


def test_a_snapshot_taken_before_records_were_kept_previews_counts_only(fleet, data_dir):
    snap = take_snapshot()
    path = data_dir / "snapshots" / snap.name / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["records"]
    path.write_text(json.dumps(manifest))
    preview = restore_preview(snap.name)
    assert preview.records is None and preview.lines
    assert list_data_snapshots()[0].holds.endswith("rows in all tables")
