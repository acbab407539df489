from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernel.errors import ArchivedConflict, NotFound
from registry import selectors, services
from registry.errors import DuplicateDirectory
from registry.models import Project, Workspace
from snapshots import services as snapshot_services
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db


def refresh(*objs):
    for obj in objs:
        obj.refresh_from_db()


class TestCreateProject:
    def test_defaults_display_name_to_last_segment_and_normalizes(self):
        project = services.create_project(directory="/home/me//code/chartr/", kind="git")
        assert project.pk is not None
        assert project.directory == "/home/me/code/chartr"
        assert project.display_name == "chartr"
        assert project.archived_at is None

    def test_unicode_and_spaces_are_kept(self):
        project = services.create_project(directory="/home/zoë/my project", kind="directory")
        assert Project.objects.get(pk=project.pk).directory == "/home/zoë/my project"

    @pytest.mark.parametrize(
        "directory",
        ["relative/path", "", "/a/../b", "/a/./b", "/a/b/..", "/a\x00b", "/" + "x" * 4096, None, 42],
    )
    def test_rejects_bad_directories(self, directory):
        with pytest.raises(ValidationError):
            services.create_project(directory=directory, kind="git")
        assert Project.objects.count() == 0

    def test_rejects_unknown_kind(self):
        with pytest.raises(ValidationError) as exc:
            services.create_project(directory="/a", kind="svn")
        assert "kind" in exc.value.message_dict

    def test_duplicate_directory_is_a_conflict_not_a_crash(self):
        services.create_project(directory="/srv/a", kind="git")
        with pytest.raises(DuplicateDirectory) as exc:
            services.create_project(directory="/srv/a/", kind="directory")
        assert exc.value.code == "duplicate_directory"
        assert Project.objects.count() == 1


class TestUpdate:
    def test_update_project_changes_only_given_fields(self):
        project = services.create_project(directory="/srv/a", kind="git", git_remote="git@x:y")
        services.update_project(project=project, display_name="Alpha")
        refresh(project)
        assert (project.display_name, project.git_remote) == ("Alpha", "git@x:y")

    def test_archived_project_cannot_change(self):
        project = ProjectFactory()
        services.archive_project(project=project)
        with pytest.raises(ArchivedConflict) as exc:
            services.update_project(project=project, display_name="nope")
        assert exc.value.code == "archived"

    def test_archived_workspace_cannot_change(self):
        workspace = WorkspaceFactory()
        services.archive_workspace(workspace=workspace)
        with pytest.raises(ArchivedConflict):
            services.update_workspace(workspace=workspace, branch="main")

    def test_unknown_record_is_not_found(self):
        with pytest.raises(NotFound):
            services.update_project(project=Project(pk=999999), display_name="x")


class TestCreateWorkspace:
    def test_requires_live_project(self):
        project = ProjectFactory()
        services.archive_project(project=project)
        with pytest.raises(ArchivedConflict):
            services.create_workspace(project=project, directory="/w", kind="checkout")
        assert Workspace.objects.count() == 0

    def test_same_directory_as_its_project_is_fine_but_not_twice(self):
        project = services.create_project(directory="/srv/repo", kind="git")
        services.create_workspace(project=project, directory="/srv/repo", kind="checkout")
        with pytest.raises(DuplicateDirectory):
            services.create_workspace(project=project, directory="/srv/repo", kind="worktree")


class TestArchiveCascade:
    def _tree(self):
        project = ProjectFactory()
        ws_a, ws_b = WorkspaceFactory(project=project), WorkspaceFactory(project=project)
        a1 = AgentFactory(workspace=ws_a, lifecycle="running")
        a2 = AgentFactory(workspace=ws_a)
        b1 = AgentFactory(workspace=ws_b)
        return project, ws_a, ws_b, a1, a2, b1

    def test_archiving_a_project_archives_live_workspaces_and_agents(self):
        project, ws_a, ws_b, a1, a2, b1 = self._tree()
        result = services.archive_project(project=project)
        assert (result.workspaces, result.agents, result.closed_agents) == (2, 3, {"idle": 2, "running": 1})
        refresh(project, ws_a, ws_b, a1, a2, b1)
        assert all(o.archived_at is not None for o in (project, ws_a, ws_b, a1, a2, b1))
        assert a1.lifecycle == "closed"

    def test_preview_counts_without_writing(self):
        project, ws_a, *_ = self._tree()
        preview = selectors.project_archive_preview(project=project)
        assert preview == selectors.ArchivePreview(workspaces=2, agents=3, closed_agents={"idle": 2, "running": 1})
        assert selectors.workspace_archive_preview(workspace=ws_a) == selectors.ArchivePreview(
            1, 2, {"idle": 1, "running": 1}
        )
        refresh(project, ws_a)
        assert project.archived_at is None and ws_a.archived_at is None

    def test_unarchive_restores_exactly_what_the_archive_took(self):
        project, ws_a, ws_b, a1, a2, b1 = self._tree()
        archive_agent(agent=a2)  # archived on its own first
        services.archive_workspace(workspace=ws_b)  # archived on its own first, with b1
        services.archive_project(project=project)
        result = services.unarchive_project(project=project)
        assert (result.workspaces, result.agents) == (1, 1)
        refresh(project, ws_a, ws_b, a1, a2, b1)
        assert project.archived_at is None
        assert ws_a.archived_at is None and a1.archived_at is None
        assert a2.archived_at is not None, "an agent archived on its own stays archived"
        assert ws_b.archived_at is not None and b1.archived_at is not None
        # ...and the workspace's own archive can still be undone on its own.
        assert services.unarchive_workspace(workspace=ws_b).agents == 1
        refresh(b1)
        assert b1.archived_at is None

    def test_archive_and_unarchive_are_idempotent(self):
        project, ws_a, *_ = self._tree()
        first = services.archive_project(project=project)
        refresh(project)
        stamped = project.archived_at
        again = services.archive_project(project=project)
        assert first.changed and not again.changed
        assert (again.workspaces, again.agents) == (0, 0)
        refresh(project)
        assert project.archived_at == stamped
        services.unarchive_project(project=project)
        assert services.unarchive_project(project=project).changed is False
        assert services.unarchive_workspace(workspace=ws_a).changed is False

    def test_unarchiving_a_workspace_of_an_archived_project_is_refused(self):
        project, ws_a, *_ = self._tree()
        services.archive_project(project=project)
        with pytest.raises(ArchivedConflict):
            services.unarchive_workspace(workspace=ws_a)

    def test_workspace_archive_takes_its_agents(self):
        _, ws_a, ws_b, a1, a2, b1 = self._tree()
        result = services.archive_workspace(workspace=ws_a)
        assert (result.workspaces, result.agents, result.closed_agents) == (1, 2, {"idle": 1, "running": 1})
        refresh(a1, a2, b1)
        assert a1.archived_at and a2.archived_at and b1.archived_at is None

    def test_version_goes_up_on_archive_and_unarchive(self):
        project, _, _, a1, *_ = self._tree()
        before = a1.version
        services.archive_project(project=project)
        services.unarchive_project(project=project)
        refresh(a1)
        assert a1.version == before + 2

    def test_cascade_costs_a_bounded_number_of_queries(self):
        project = ProjectFactory()
        workspaces = [
            Workspace(project=project, directory=f"/big/ws-{i}", display_name=f"ws-{i}", kind="checkout")
            for i in range(50)
        ]
        Workspace.objects.bulk_create(workspaces)
        agents = [
            AgentSnapshot(agent_id=f"a-{w.pk}-{j}", workspace=w, provider="p", lifecycle="running")
            for w in Workspace.objects.filter(project=project)
            for j in range(20)
        ]
        AgentSnapshot.objects.bulk_create(agents)

        with CaptureQueriesContext(connection) as archive_queries:
            result = services.archive_project(project=project)
        assert (result.workspaces, result.agents) == (50, 1000)
        with CaptureQueriesContext(connection) as unarchive_queries:
            restored = services.unarchive_project(project=project)
        assert (restored.workspaces, restored.agents) == (50, 1000)
        assert len(archive_queries) <= 8, [q["sql"][:80] for q in archive_queries]
        assert len(unarchive_queries) <= 8, [q["sql"][:80] for q in unarchive_queries]
        assert AgentSnapshot.objects.live().count() == 1000


class TestHardDelete:
    def test_deleting_a_project_takes_everything_under_it(self):
        agent = AgentFactory()
        TimelineRow.objects.create(
            agent=agent, seq=1, committed_at=agent.created_at, item_type="user_message", item={"type": "user_message"}
        )
        services.delete_project(project=agent.workspace.project)
        assert not Workspace.objects.exists()
        assert not AgentSnapshot.objects.exists()
        assert not TimelineRow.objects.exists()


@pytest.mark.django_db
class TestUnarchiveRestoresLifecycles:
    def test_each_agent_gets_back_the_lifecycle_its_archive_closed(self):
        project = ProjectFactory()
        workspace = WorkspaceFactory(project=project)
        lifecycles = {"a-init": "initializing", "a-idle": "idle", "a-run": "running", "a-err": "error"}
        lifecycles["a-closed"] = "closed"
        for agent_id, lifecycle in lifecycles.items():
            AgentFactory(workspace=workspace, agent_id=agent_id, lifecycle=lifecycle)
        result = services.archive_project(project=project)
        assert result.closed_agents == {"initializing": 1, "idle": 1, "running": 1, "error": 1}
        assert set(AgentSnapshot.objects.values_list("lifecycle", flat=True)) == {"closed"}
        project.refresh_from_db()
        preview = selectors.project_unarchive_preview(project=project)
        assert preview.reopened_agents == result.closed_agents
        undone = services.unarchive_project(project=project)
        assert undone.reopened_agents == result.closed_agents
        assert dict(AgentSnapshot.objects.values_list("agent_id", "lifecycle")) == lifecycles
        assert not AgentSnapshot.objects.filter(lifecycle_before_archive__isnull=False).exists()
        # Again: nothing left to restore, nothing changes.
        project.refresh_from_db()
        assert services.unarchive_project(project=project).changed is False
        assert dict(AgentSnapshot.objects.values_list("agent_id", "lifecycle")) == lifecycles

    def test_an_agent_archived_before_its_workspace_keeps_its_own_archive(self):
        workspace = WorkspaceFactory()
        solo = AgentFactory(workspace=workspace, lifecycle="running")
        AgentFactory(workspace=workspace, lifecycle="idle")
        snapshot_services.archive_agent(agent=solo)
        services.archive_workspace(workspace=workspace)
        workspace.refresh_from_db()
        services.unarchive_workspace(workspace=workspace)
        solo.refresh_from_db()
        assert (solo.lifecycle, solo.lifecycle_before_archive, solo.archived_at is not None) == (
            "closed",
            "running",
            True,
        )
        snapshot_services.unarchive_agent(agent=solo)
        solo.refresh_from_db()
        assert (solo.lifecycle, solo.lifecycle_before_archive, solo.archived_at) == ("running", None, None)
