from __future__ import annotations

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.urls import reverse
from django.utils import timezone

from registry.models import Project, Workspace
from registry.services import archive_project, archive_workspace
from snapshots.models import AgentSnapshot
from tests.datadir.conftest import snapshot_dirs
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.admin import messages_of
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"admin:registry_{name}", args=args)


def log_entries(obj, flag=None):
    entries = LogEntry.objects.filter(object_id=str(obj.pk), content_type__model=obj._meta.model_name)
    return entries.filter(action_flag=flag) if flag else entries


class TestProjectCreate:
    def test_creates_through_the_service_and_logs_it(self, admin_client, admin_user):
        response = admin_client.post(
            url("project_add"), {"directory": "/srv/code//chartr/", "kind": "git", "display_name": "", "git_remote": ""}
        )
        assert response.status_code == 302, response.content
        project = Project.objects.get()
        # normalized and defaulted by create_project, not by the form
        assert (project.directory, project.display_name, project.kind) == ("/srv/code/chartr", "chartr", "git")
        entry = log_entries(project, ADDITION).get()
        assert entry.user == admin_user

    @pytest.mark.parametrize(
        "directory, message",
        [("relative/path", "absolute path"), ("/a/../b", "'.' or '..'"), ("/a\x00b", "Null characters")],
    )
    def test_service_validation_error_shows_on_the_directory_field(self, admin_client, directory, message):
        response = admin_client.post(url("project_add"), {"directory": directory, "kind": "git"})
        assert response.status_code == 200
        errors = response.context["adminform"].form.errors
        assert message in " ".join(errors["directory"])
        assert Project.objects.count() == 0
        assert LogEntry.objects.count() == 0

    def test_duplicate_directory_is_a_form_error_not_a_crash(self, admin_client):
        ProjectFactory(directory="/srv/a")
        response = admin_client.post(url("project_add"), {"directory": "/srv/a/", "kind": "directory"})
        assert response.status_code == 200
        assert "already exists" in " ".join(response.context["adminform"].form.errors["directory"])
        assert Project.objects.count() == 1

    def test_unknown_kind_is_refused(self, admin_client):
        response = admin_client.post(url("project_add"), {"directory": "/srv/a", "kind": "svn"})
        assert response.status_code == 200
        assert "kind" in response.context["adminform"].form.errors
        assert Project.objects.count() == 0


class TestProjectEdit:
    def test_edit_goes_through_update_project(self, admin_client, admin_user):
        project = ProjectFactory(directory="/srv/a", display_name="a")
        response = admin_client.post(
            url("project_change", project.pk), {"display_name": "Renamed", "git_remote": "git@x:y.git"}
        )
        assert response.status_code == 302, response.content
        project.refresh_from_db()
        assert (project.display_name, project.git_remote, project.directory) == ("Renamed", "git@x:y.git", "/srv/a")
        entry = log_entries(project, CHANGE).get()
        assert entry.user == admin_user and "Display name" in entry.get_change_message()

    def test_directory_and_kind_are_not_editable(self, admin_client):
        project = ProjectFactory(directory="/srv/a")
        admin_client.post(
            url("project_change", project.pk),
            {"display_name": "x", "git_remote": "", "directory": "/elsewhere", "kind": "directory"},
        )
        project.refresh_from_db()
        assert (project.directory, project.kind) == ("/srv/a", "git")

    def test_blank_display_name_is_refused_on_the_form(self, admin_client):
        project = ProjectFactory(directory="/srv/a")
        response = admin_client.post(url("project_change", project.pk), {"display_name": "", "git_remote": ""})
        assert response.status_code == 200
        assert "display_name" in response.context["adminform"].form.errors

    def test_archived_project_is_read_only(self, admin_client):
        project = ProjectFactory(directory="/srv/a", display_name="a")
        archive_project(project=project)
        page = admin_client.get(url("project_change", project.pk))
        assert page.status_code == 200
        content = page.content.decode()
        assert "View project" in content and 'name="display_name"' not in content
        assert 'id="unarchive-button"' in content and 'id="archive-button"' not in content
        response = admin_client.post(url("project_change", project.pk), {"display_name": "b", "git_remote": ""})
        assert response.status_code == 403
        project.refresh_from_db()
        assert project.display_name == "a"


class TestWorkspaceCreate:
    def test_only_live_projects_are_offered(self, admin_client):
        live = ProjectFactory(directory="/srv/live")
        archived = ProjectFactory(directory="/srv/gone")
        archive_project(project=archived)
        form = admin_client.get(url("workspace_add")).context["adminform"].form
        assert list(form.fields["project"].queryset) == [live]

    def test_creates_in_a_live_project(self, admin_client, admin_user):
        project = ProjectFactory(directory="/srv/p")
        response = admin_client.post(
            url("workspace_add"), {"project": project.pk, "directory": "/srv/p-wt", "kind": "worktree", "branch": "dev"}
        )
        assert response.status_code == 302, response.content
        workspace = Workspace.objects.get()
        assert (workspace.project, workspace.display_name, workspace.branch) == (project, "p-wt", "dev")
        assert log_entries(workspace, ADDITION).get().user == admin_user

    def test_archived_project_is_refused_on_the_form(self, admin_client):
        project = ProjectFactory(directory="/srv/p")
        archive_project(project=project)
        response = admin_client.post(
            url("workspace_add"), {"project": project.pk, "directory": "/srv/p-wt", "kind": "worktree"}
        )
        assert response.status_code == 200
        assert "project" in response.context["adminform"].form.errors
        assert Workspace.objects.count() == 0

    def test_project_archived_after_the_form_was_shown_gets_the_service_error(self, admin_client, monkeypatch):
        # The form's queryset still offers it (it was live when listed); the service refuses.
        project = ProjectFactory(directory="/srv/p")
        from registry.admin import WorkspaceAddForm

        monkeypatch.setattr(WorkspaceAddForm.base_fields["project"], "queryset", Project.objects.all())
        archive_project(project=project)
        response = admin_client.post(
            url("workspace_add"), {"project": project.pk, "directory": "/srv/p-wt", "kind": "worktree"}
        )
        assert response.status_code == 200
        assert "archived" in " ".join(response.context["adminform"].form.errors["project"])
        assert Workspace.objects.count() == 0

    def test_edit_goes_through_update_workspace(self, admin_client):
        workspace = WorkspaceFactory(directory="/srv/w")
        response = admin_client.post(url("workspace_change", workspace.pk), {"display_name": "W", "branch": "main"})
        assert response.status_code == 302
        workspace.refresh_from_db()
        assert (workspace.display_name, workspace.branch) == ("W", "main")
        assert log_entries(workspace, CHANGE).count() == 1


@pytest.fixture
def project_tree():
    """A project with two live workspaces (three agents, two running) and one archived on its own."""
    project = ProjectFactory(directory="/srv/tree")
    first = WorkspaceFactory(project=project, directory="/srv/tree/one")
    second = WorkspaceFactory(project=project, directory="/srv/tree/two")
    solo = WorkspaceFactory(project=project, directory="/srv/tree/solo")
    AgentFactory(workspace=first, agent_id="a-1", lifecycle=AgentSnapshot.Lifecycle.RUNNING)
    AgentFactory(workspace=first, agent_id="a-2", lifecycle=AgentSnapshot.Lifecycle.IDLE)
    AgentFactory(workspace=second, agent_id="a-3", lifecycle=AgentSnapshot.Lifecycle.RUNNING)
    AgentFactory(workspace=solo, agent_id="a-solo")
    archive_workspace(workspace=solo)
    return project


class TestArchiveFromChangePage:
    def test_confirmation_page_states_what_will_be_affected_and_changes_nothing(self, admin_client, project_tree):
        response = admin_client.get(url("project_archive", project_tree.pk))
        assert response.status_code == 200
        text = response.content.decode()
        assert "Archiving project “tree (/srv/tree)” also archives its 2 workspaces and 3 agents." in text
        assert "It closes 1 idle and 2 running agents; unarchiving reopens each as it was." in text
        assert 'id="confirm-button"' in text
        project_tree.refresh_from_db()
        assert project_tree.archived_at is None

    def test_change_page_has_the_archive_button(self, admin_client, project_tree):
        text = admin_client.get(url("project_change", project_tree.pk)).content.decode()
        assert url("project_archive", project_tree.pk) in text

    def test_confirming_archives_reports_counts_and_logs(self, admin_client, admin_user, project_tree):
        response = admin_client.post(url("project_archive", project_tree.pk), {"confirm": "yes"})
        assert response.status_code == 302
        assert response["Location"] == url("project_change", project_tree.pk)
        assert messages_of(response) == [
            "Archived 1 project; also archived its 2 workspaces and 3 agents; closed 1 idle and 2 running."
        ]
        project_tree.refresh_from_db()
        assert project_tree.archived_at is not None
        assert Workspace.objects.live().count() == 0
        assert AgentSnapshot.objects.live().count() == 0
        entry = log_entries(project_tree, CHANGE).get()
        assert entry.user == admin_user and entry.change_message.startswith(
            "Archived; also archived its 2 workspaces and 3 agents"
        )

    def test_post_without_confirmation_only_shows_the_page(self, admin_client, project_tree):
        response = admin_client.post(url("project_archive", project_tree.pk), {})
        assert response.status_code == 200
        project_tree.refresh_from_db()
        assert project_tree.archived_at is None

    def test_a_project_that_is_gone_sends_the_operator_to_the_index_saying_so(self, admin_client):
        response = admin_client.post(url("project_archive", 987654), {"confirm": "yes"})
        assert response.status_code == 302 and response["Location"] == reverse("admin:index")
        assert messages_of(response) == ["project with ID “987654” doesn’t exist. Perhaps it was deleted?"]

    def test_archiving_twice_is_a_no_op_with_a_message(self, admin_client, project_tree):
        admin_client.post(url("project_archive", project_tree.pk), {"confirm": "yes"}, follow=True)
        response = admin_client.post(url("project_archive", project_tree.pk), {"confirm": "yes"})
        assert messages_of(response) == ["1 project already archived; left unchanged."]
        assert log_entries(project_tree, CHANGE).count() == 1

    def test_unarchive_restores_exactly_what_the_archive_took(self, admin_client, admin_user, project_tree):
        admin_client.post(url("project_archive", project_tree.pk), {"confirm": "yes"}, follow=True)
        page = admin_client.get(url("project_unarchive", project_tree.pk))
        assert "also restores its 2 workspaces and 3 agents." in page.content.decode()
        response = admin_client.post(url("project_unarchive", project_tree.pk), {"confirm": "yes"})
        assert messages_of(response) == [
            "Unarchived 1 project; also restored its 2 workspaces and 3 agents; reopened 1 as idle and 2 as running."
        ]
        project_tree.refresh_from_db()
        assert project_tree.archived_at is None
        # the workspace archived on its own before stays archived
        assert Workspace.objects.get(directory="/srv/tree/solo").archived_at is not None
        assert log_entries(project_tree, CHANGE).latest("action_time").change_message.startswith("Unarchived")

    def test_unarchive_of_workspace_in_archived_project_is_explained_not_crashed(self, admin_client, project_tree):
        archive_project(project=project_tree)
        workspace = Workspace.objects.get(directory="/srv/tree/one")
        page = admin_client.get(url("workspace_unarchive", workspace.pk))
        text = page.content.decode()
        assert "unarchive that instead" in text and 'id="confirm-button"' not in text
        response = admin_client.post(url("workspace_unarchive", workspace.pk), {"confirm": "yes"})
        assert response.status_code == 302
        assert any("unarchive the project instead" in m for m in messages_of(response))
        workspace.refresh_from_db()
        assert workspace.archived_at is not None

    def test_unknown_object_redirects_with_a_message(self, admin_client):
        response = admin_client.get(url("project_archive", 999999))
        assert response.status_code == 302


class TestArchiveActions:
    def test_list_action_confirms_then_archives_all_selected(self, admin_client, project_tree):
        other = ProjectFactory(directory="/srv/other")
        WorkspaceFactory(project=other, directory="/srv/other/w")
        changelist = url("project_changelist")
        data = {"action": "archive_selected", "_selected_action": [project_tree.pk, other.pk]}
        page = admin_client.post(changelist, data)
        assert page.status_code == 200
        text = page.content.decode()
        assert "Archiving 2 projects also archives their 3 workspaces and 3 agents." in text
        assert Project.objects.live().count() == 2

        response = admin_client.post(changelist, {**data, "confirm": "yes"})
        assert response.status_code == 302
        assert messages_of(response) == [
            "Archived 2 projects; also archived 3 workspaces and 3 agents; closed 1 idle and 2 running."
        ]
        assert Project.objects.live().count() == 0
        assert LogEntry.objects.filter(action_flag=CHANGE).count() == 2

    def test_a_record_deleted_before_confirmation_is_reported_not_crashed(
        self, admin_client, project_tree, monkeypatch
    ):
        from kernel.errors import NotFound
        from registry.admin import ProjectAdmin

        def vanished(**kwargs):
            raise NotFound("Project vanished meanwhile.")

        monkeypatch.setattr(ProjectAdmin, "archive_service", staticmethod(vanished))
        data = {"action": "archive_selected", "_selected_action": [project_tree.pk], "confirm": "yes"}
        response = admin_client.post(url("project_changelist"), data)
        assert response.status_code == 302
        assert any("vanished meanwhile" in m for m in messages_of(response))

    def test_unarchive_action(self, admin_client, project_tree):
        archive_project(project=project_tree)
        data = {"action": "unarchive_selected", "_selected_action": [project_tree.pk], "confirm": "yes"}
        # The list shows live records unless asked; the action acts on the list the operator sees.
        response = admin_client.post(url("project_changelist") + "?archived=yes", data)
        assert messages_of(response) == [
            "Unarchived 1 project; also restored its 2 workspaces and 3 agents; reopened 1 as idle and 2 as running."
        ]

    def test_workspace_archive_action_counts_its_agents(self, admin_client, project_tree):
        workspace = Workspace.objects.get(directory="/srv/tree/one")
        data = {"action": "archive_selected", "_selected_action": [workspace.pk], "confirm": "yes"}
        response = admin_client.post(url("workspace_changelist"), data)
        assert messages_of(response) == [
            "Archived 1 workspace; also archived its 2 agents; closed 1 idle and 1 running."
        ]

    def test_archive_needs_change_permission(self, staff_client, project_tree):
        client = staff_client("registry.view_project")
        assert client.get(url("project_archive", project_tree.pk)).status_code == 403
        assert client.post(url("project_archive", project_tree.pk), {"confirm": "yes"}).status_code == 403
        response = client.post(
            url("project_changelist"),
            {"action": "archive_selected", "_selected_action": [project_tree.pk], "confirm": "yes"},
        )
        # the action is not offered to a user without change permission
        assert response.status_code in (200, 302)
        project_tree.refresh_from_db()
        assert project_tree.archived_at is None

    def test_staff_with_change_permission_may_archive(self, staff_client, project_tree):
        client = staff_client("registry.view_project", "registry.change_project")
        response = client.post(url("project_archive", project_tree.pk), {"confirm": "yes"})
        assert response.status_code == 302
        project_tree.refresh_from_db()
        assert project_tree.archived_at is not None


def add_timeline(agent, count: int) -> None:
    from django.utils import timezone

    now = timezone.now()
    TimelineRow.objects.bulk_create(
        TimelineRow(
            agent=agent,
            seq=seq,
            committed_at=now,
            item_type="user_message",
            item={"type": "user_message", "text": "hi"},
        )
        for seq in range(1, count + 1)
    )
    TimelineHead.objects.filter(pk=agent.pk).update(head_seq=count)


class TestHardDelete:
    def test_confirmation_shows_the_cascade_as_counts(self, admin_client, project_tree):
        add_timeline(AgentSnapshot.objects.get(pk="a-1"), 7)
        page = admin_client.get(url("project_delete", project_tree.pk))
        assert page.status_code == 200
        text = page.content.decode()
        assert "3 workspaces, 4 agents, 7 timeline rows" in text
        summary = dict(page.context["model_count"])
        assert summary == {"projects": 1, "workspaces": 3, "agents": 4, "timeline rows": 7}

    def test_superuser_deletes_through_the_service_and_it_is_logged(self, admin_client, admin_user, project_tree):
        add_timeline(AgentSnapshot.objects.get(pk="a-1"), 3)
        pk = project_tree.pk
        response = admin_client.post(url("project_delete", pk), {"post": "yes"})
        assert response.status_code == 302
        assert (Project.objects.count(), Workspace.objects.count(), AgentSnapshot.objects.count()) == (0, 0, 0)
        assert TimelineRow.objects.count() == 0
        entry = LogEntry.objects.get(action_flag=DELETION, object_id=str(pk))
        assert entry.user == admin_user

    # A snapshot needs committed data: it is taken outside any transaction.
    @pytest.mark.django_db(transaction=True)
    def test_delete_selected_action_is_superuser_only_and_uses_counts(self, admin_client, project_tree, data_dir):
        workspace = Workspace.objects.get(directory="/srv/tree/one")
        data = {"action": "delete_selected", "_selected_action": [workspace.pk]}
        page = admin_client.post(url("workspace_changelist"), data)
        assert dict(page.context["model_count"]) == {"workspaces": 1, "agents": 2}
        assert snapshot_dirs(data_dir) == [], "the confirmation page takes no snapshot"
        response = admin_client.post(url("workspace_changelist"), {**data, "post": "yes"})
        assert not Workspace.objects.filter(pk=workspace.pk).exists()
        assert not AgentSnapshot.objects.filter(pk__in=["a-1", "a-2"]).exists()
        assert LogEntry.objects.filter(action_flag=DELETION).count() == 1
        [snapshot] = snapshot_dirs(data_dir)
        assert '"reason": "pre-delete"' in (data_dir / "snapshots" / snapshot / "manifest.json").read_text()
        assert any(f"restore --from {snapshot}" in m for m in messages_of(response))

    def test_bulk_delete_is_refused_when_it_could_not_be_undone(self, admin_client, project_tree, data_dir, settings):
        settings.CHARTR_SNAPSHOTS_KEEP = 0
        workspace = Workspace.objects.get(directory="/srv/tree/one")
        data = {"action": "delete_selected", "_selected_action": [workspace.pk], "post": "yes"}
        response = admin_client.post(url("workspace_changelist"), data)
        assert response.status_code == 302
        assert any("could not be undone" in m for m in messages_of(response))
        assert not any("Successfully deleted" in m for m in messages_of(response))
        assert Workspace.objects.filter(pk=workspace.pk).exists()

    def test_staff_with_delete_permission_still_cannot_hard_delete(self, staff_client, project_tree):
        client = staff_client("registry.view_project", "registry.change_project", "registry.delete_project")
        assert client.get(url("project_delete", project_tree.pk)).status_code == 403
        assert client.post(url("project_delete", project_tree.pk), {"post": "yes"}).status_code == 403
        assert Project.objects.filter(pk=project_tree.pk).exists()
        changelist = client.get(url("project_changelist"))
        assert "delete_selected" not in changelist.content.decode()


class TestListPages:
    def test_project_list_shows_live_counts(self, admin_client, project_tree):
        response = admin_client.get(url("project_changelist"))
        row = response.context["cl"].result_list.get(pk=project_tree.pk)
        assert (row.live_workspace_count, row.live_agent_count) == (2, 3)

    def test_filters_and_search(self, admin_client, project_tree):
        ProjectFactory(directory="/srv/dir-kind", kind="directory")
        archived = ProjectFactory(directory="/srv/old")
        archive_project(project=archived)

        def shown(**params):
            return {p.directory for p in admin_client.get(url("project_changelist"), params).context["cl"].result_list}

        assert shown(archived="yes") == {"/srv/old"}
        assert shown(archived="no") == {"/srv/tree", "/srv/dir-kind"}
        assert shown() == {"/srv/tree", "/srv/dir-kind"}, "the list opens on live records"
        assert shown(archived="all") == {"/srv/tree", "/srv/dir-kind", "/srv/old"}
        assert shown(kind__exact="directory") == {"/srv/dir-kind"}
        assert shown(q="tree") == {"/srv/tree"}

        workspaces = admin_client.get(
            url("workspace_changelist"), {"project__id__exact": project_tree.pk, "archived": "yes"}
        )
        assert {w.directory for w in workspaces.context["cl"].result_list} == {"/srv/tree/solo"}


class TestListLooks:
    def test_the_archived_filter_offers_live_archived_and_all_with_live_selected(self, admin_client):
        response = admin_client.get(url("workspace_changelist"))
        (archived_filter,) = [spec for spec in response.context["cl"].filter_specs if spec.title == "archived"]
        choices = list(archived_filter.choices(response.context["cl"]))
        assert [(c["display"], c["selected"]) for c in choices] == [("Live", True), ("Archived", False), ("All", False)]

    def test_archived_rows_carry_a_dated_label_not_a_check_mark(self, admin_client):
        project = ProjectFactory(directory="/srv/old")
        archive_project(project=project)
        project.refresh_from_db()
        text = admin_client.get(url("project_changelist"), {"archived": "all"}).content.decode()
        assert f'<span class="archived-label">archived {project.archived_at:%Y-%m-%d}</span>' in text
        assert "icon-yes.svg" not in text and "icon-no.svg" not in text

    def test_archived_banner_has_seconds_a_zone_and_one_period(self, admin_client, settings):
        project = ProjectFactory(directory="/srv/old")
        archive_project(project=project)
        project.refresh_from_db()
        text = admin_client.get(url("project_change", project.pk)).content.decode()
        stamp = project.archived_at.astimezone(timezone.get_current_timezone()).strftime("%Y-%m-%d %H:%M:%S")
        assert f"Archived {stamp} UTC. Archived records are read-only" in text
        assert ".." not in text.split('class="errornote archived-note">')[1].split("</p>")[0]

    def test_every_admin_page_loads_chartrs_stylesheet(self, admin_client):
        for page in (reverse("admin:index"), url("project_changelist"), url("workspace_add")):
            assert "chartr/admin.css" in admin_client.get(page).content.decode(), page


def test_root_redirects_to_the_admin(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")
