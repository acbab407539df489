"""The reads behind the admin's list columns and confirmation pages."""

import pytest
from django.utils import timezone

from registry import selectors
from registry.services import archive_project, archive_workspace
from snapshots.selectors import agent_unarchive_preview
from snapshots.services import archive_agent
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db


def test_live_counts_ignore_archived_children_and_do_not_multiply():
    project = ProjectFactory()
    first, second = WorkspaceFactory(project=project), WorkspaceFactory(project=project)
    for _ in range(3):
        AgentFactory(workspace=first)
    archive_agent(agent=AgentFactory(workspace=second))
    archive_workspace(workspace=WorkspaceFactory(project=project))
    empty = ProjectFactory()
    counts = {p.pk: (p.live_workspace_count, p.live_agent_count) for p in selectors.projects_with_live_counts()}
    assert counts == {project.pk: (2, 3), empty.pk: (0, 0)}
    by_workspace = {w.pk: w.live_agent_count for w in selectors.workspaces_with_live_counts()}
    assert (by_workspace[first.pk], by_workspace[second.pk]) == (3, 0)


def test_unarchive_preview_counts_exactly_the_operation():
    project = ProjectFactory()
    workspace = WorkspaceFactory(project=project)
    AgentFactory(workspace=workspace)
    solo = AgentFactory(workspace=workspace)
    archive_agent(agent=solo)  # archived on its own first: not the project's to restore
    assert selectors.project_unarchive_preview(project=project) == selectors.UnarchivePreview()
    archive_project(project=project)
    project.refresh_from_db()
    workspace.refresh_from_db()
    solo.refresh_from_db()
    assert selectors.project_unarchive_preview(project=project) == selectors.UnarchivePreview(
        workspaces=1, agents=1, reopened_agents={"idle": 1}
    )
    assert selectors.workspace_unarchive_preview(workspace=workspace).blocked_by == str(project)
    assert agent_unarchive_preview(agent=solo) == selectors.UnarchivePreview(
        agents=1, reopened_agents={"idle": 1}, blocked_by=str(workspace)
    )


def test_deletion_cascade_for_each_kind():
    workspace = WorkspaceFactory()
    agent = AgentFactory(workspace=workspace)
    AgentFactory(workspace=workspace)
    now = timezone.now()
    TimelineRow.objects.bulk_create(
        TimelineRow(agent=agent, seq=n, committed_at=now, item_type="x", item={"type": "x"}) for n in (1, 2, 3)
    )
    assert selectors.deletion_cascade(projects=[workspace.project]) == selectors.DeletionCascade(1, 1, 2, 3)
    assert selectors.deletion_cascade(workspaces=[workspace]) == selectors.DeletionCascade(0, 1, 2, 3)
    assert selectors.deletion_cascade(agents=[agent]) == selectors.DeletionCascade(0, 0, 1, 3)
