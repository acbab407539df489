"""manage.py purge_archived: what goes, what stays, the pre-purge snapshot that undoes it."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from datadir.services import restore_snapshot
from registry.models import Project, Workspace
from registry.services import archive_project, archive_workspace
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent
from tests.datadir.conftest import append_rows, database_state, snapshot_dirs
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db(transaction=True)


def purge(*args) -> str:
    out = io.StringIO()
    call_command("purge_archived", *args, stdout=out)
    return out.getvalue()


def archived_days_ago(model, pk, days: int) -> None:
    model.objects.filter(pk=pk).update(archived_at=timezone.now() - dt.timedelta(days=days))


@pytest.fixture
def fleet():
    """A live tree, an archived project with a workspace and agents, an archived workspace
    in a live project, and an agent archived on its own: each with timeline rows."""
    live_ws = WorkspaceFactory(project=ProjectFactory(directory="/srv/live"), directory="/srv/live/ws")
    AgentFactory(workspace=live_ws, agent_id="live")
    old_project = ProjectFactory(directory="/srv/old")
    AgentFactory(workspace=WorkspaceFactory(project=old_project, directory="/srv/old/ws"), agent_id="old-1")
    AgentFactory(workspace=Workspace.objects.get(directory="/srv/old/ws"), agent_id="old-2")
    old_ws = WorkspaceFactory(project=Project.objects.get(directory="/srv/live"), directory="/srv/live/old-ws")
    AgentFactory(workspace=old_ws, agent_id="old-ws-agent")
    AgentFactory(workspace=live_ws, agent_id="alone")
    for agent_id in ("live", "old-1", "old-2", "old-ws-agent", "alone"):
        append_rows(agent_id, 3)
    archive_project(project=old_project)
    archive_workspace(workspace=old_ws)
    archive_agent(agent=AgentSnapshot.objects.get(pk="alone"))


def test_purge_at_zero_days_removes_every_archived_record_and_leaves_a_pre_purge_snapshot(data_dir, fleet):
    out = purge("--older-than", "0")
    assert "projects: 1\n  workspaces: 2\n  agents: 4\n  timeline rows: 12" in out
    assert list(AgentSnapshot.objects.values_list("agent_id", flat=True)) == ["live"]
    assert TimelineRow.objects.count() == 3
    assert list(Workspace.objects.values_list("directory", flat=True)) == ["/srv/live/ws"]
    assert list(Project.objects.values_list("directory", flat=True)) == ["/srv/live"]
    [snapshot] = snapshot_dirs(data_dir)
    assert f"restore --from {snapshot}" in out
    assert '"reason": "pre-purge"' in (data_dir / "snapshots" / snapshot / "manifest.json").read_text()
    assert "projects: 0\n  workspaces: 0\n  agents: 0\n  timeline rows: 0" in purge("--older-than", "0")


def test_records_archived_more_recently_than_the_cutoff_are_never_touched(data_dir, fleet):
    before = database_state()
    assert "agents: 0" in purge("--older-than", "30")
    assert database_state() == before
    archived_days_ago(AgentSnapshot, "alone", 40)
    assert "agents: 1\n  timeline rows: 3" in purge("--older-than", "30")
    assert not AgentSnapshot.objects.filter(pk="alone").exists()
    assert AgentSnapshot.objects.filter(pk="old-1").exists()


def test_restoring_the_pre_purge_snapshot_brings_everything_back(data_dir, fleet):
    before = database_state()
    purge("--older-than", "0")
    [snapshot] = snapshot_dirs(data_dir)
    restore_snapshot(name=snapshot)
    restored = database_state()
    agents_table = AgentSnapshot._meta.db_table
    assert {k: v for k, v in restored.items() if k != "django_session"} == {
        k: v for k, v in before.items() if k != "django_session"
    }
    assert len(restored[agents_table]) == 5


def test_dry_run_counts_and_changes_nothing(data_dir, fleet):
    before = database_state()
    out = purge("--older-than", "0", "--dry-run")
    assert "(dry run)" in out and "agents: 4" in out and "timeline rows: 12" in out
    assert database_state() == before
    assert snapshot_dirs(data_dir) == []


def test_the_default_age_comes_from_the_environment(data_dir, fleet, settings):
    with pytest.raises(CommandError, match="CHARTR_RETENTION_ARCHIVED_DAYS"):
        purge()
    settings.CHARTR_RETENTION_ARCHIVED_DAYS = 0
    assert "agents: 4" in purge()


def test_purge_refuses_when_it_could_not_be_undone(data_dir, fleet, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    before = database_state()
    with pytest.raises(CommandError, match="cannot be taken and this could not be undone"):
        purge("--older-than", "0")
    assert database_state() == before


def test_a_negative_age_is_refused(data_dir):
    with pytest.raises(CommandError, match="0 or more"):
        purge("--older-than", "-1")
