"""Projects and workspaces in the admin: every write goes through registry.services."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from kernel.admin import ArchivableAdmin, ArchivedListFilter, ServiceForm
from registry import selectors, services
from registry.cascade import ARCHIVE_TAKES_ALONG
from registry.directories import MAX_DIRECTORY_LENGTH
from registry.models import Project, Workspace


def directory_field(**kwargs) -> forms.CharField:
    # Not stripped, and with room for redundant slashes: the service's
    # normalize_directory is the one rule for directories (as in the API).
    return forms.CharField(max_length=MAX_DIRECTORY_LENGTH * 2, strip=False, **kwargs)


class DirectoryRecordAdmin(ArchivableAdmin):
    """What the project and workspace admins share: their order, the live agents under a record
    (counted by their selectors) and what a delete takes along (``cascade_key`` names their kind)."""

    date_hierarchy = "created_at"
    ordering = ["-created_at", "-id"]
    state_kind = "agents"

    @admin.display(description="live agents", ordering="live_agent_count")
    def live_agents(self, obj):
        return obj.live_agent_count

    def deletion_counts(self, objs):
        return selectors.deletion_cascade(**{self.cascade_key: objs}).by_label()


# --- Projects ---------------------------------------------------------------


class ProjectAddForm(ServiceForm):
    directory = directory_field(help_text="Absolute path, e.g. /home/me/code/chartr.")
    display_name = forms.CharField(
        max_length=255, required=False, help_text="Defaults to the directory's last segment."
    )
    git_remote = forms.CharField(max_length=2048, required=False)

    error_fields = {"duplicate_directory": "directory"}
    plain_error_field = "directory"

    class Meta:
        model = Project
        fields = ["directory", "kind", "display_name", "git_remote"]

    def call_service(self):
        # A blank display name or git remote is "none" to the service.
        return services.create_project(**self.cleaned_data)


class ProjectChangeForm(ServiceForm):
    class Meta:
        model = Project
        fields = ["display_name", "git_remote"]

    def call_service(self):
        changes = self.changed_values(["display_name", "git_remote"])
        if not changes:
            return None
        return services.update_project(project=self.instance, **changes)


@admin.register(Project)
class ProjectAdmin(DirectoryRecordAdmin):
    form = ProjectChangeForm
    add_form = ProjectAddForm
    fieldsets = [
        (None, {"fields": ["directory", "kind", "display_name", "git_remote"]}),
        ("Status", {"fields": ["live_workspaces", "live_agents", "created_at", "updated_at", "archived_at"]}),
        ("Imported keys", {"fields": ["extra"], "classes": ["collapse"]}),
    ]
    readonly_fields = [
        "directory",
        "kind",
        "live_workspaces",
        "live_agents",
        "created_at",
        "updated_at",
        "archived_at",
        "extra",
    ]
    list_display = [
        "display_name",
        "directory",
        "kind",
        "live_workspaces",
        "live_agents",
        "created_at",
        "archived_state",
    ]
    list_filter = [ArchivedListFilter, "kind"]
    search_fields = ["directory", "display_name"]

    service_arg = "project"
    cascade_key = "projects"
    archive_takes_along = ARCHIVE_TAKES_ALONG["projects"]
    archive_service = staticmethod(services.archive_project)
    unarchive_service = staticmethod(services.unarchive_project)
    archive_preview = staticmethod(selectors.project_archive_preview)
    unarchive_preview = staticmethod(selectors.project_unarchive_preview)
    delete_service = staticmethod(services.delete_project)

    def get_queryset(self, request):
        return selectors.projects_with_live_counts(super().get_queryset(request))

    @admin.display(description="live workspaces", ordering="live_workspace_count")
    def live_workspaces(self, obj):
        return obj.live_workspace_count


# --- Workspaces -------------------------------------------------------------


class WorkspaceAddForm(ServiceForm):
    project = forms.ModelChoiceField(
        queryset=Project.objects.live().order_by("display_name", "id"),
        help_text="Only live projects take new workspaces.",
    )
    directory = directory_field(help_text="Absolute path of the checkout or worktree.")
    display_name = forms.CharField(
        max_length=255, required=False, help_text="Defaults to the directory's last segment."
    )
    branch = forms.CharField(max_length=255, required=False)

    error_fields = {"duplicate_directory": "directory", "archived": "project", "not_found": "project"}
    plain_error_field = "directory"

    class Meta:
        model = Workspace
        fields = ["project", "directory", "kind", "display_name", "branch"]

    def call_service(self):
        # A blank display name or branch is "none" to the service.
        return services.create_workspace(**self.cleaned_data)


class WorkspaceChangeForm(ServiceForm):
    class Meta:
        model = Workspace
        fields = ["display_name", "branch"]

    def call_service(self):
        changes = self.changed_values(["display_name", "branch"])
        if not changes:
            return None
        return services.update_workspace(workspace=self.instance, **changes)


@admin.register(Workspace)
class WorkspaceAdmin(DirectoryRecordAdmin):
    form = WorkspaceChangeForm
    add_form = WorkspaceAddForm
    fieldsets = [
        (None, {"fields": ["project", "directory", "kind", "display_name", "branch", "worktree_root"]}),
        ("Status", {"fields": ["live_agents", "created_at", "updated_at", "archived_at"]}),
        ("Imported keys", {"fields": ["extra"], "classes": ["collapse"]}),
    ]
    readonly_fields = [
        "extra",
        "project",
        "directory",
        "kind",
        "worktree_root",
        "live_agents",
        "created_at",
        "updated_at",
        "archived_at",
    ]
    list_display = [
        "display_name",
        "directory",
        "project_link",
        "kind",
        "branch",
        "live_agents",
        "created_at",
        "archived_state",
    ]
    list_filter = [ArchivedListFilter, "kind", "project"]
    search_fields = ["directory", "display_name", "project__directory", "project__display_name"]

    service_arg = "workspace"
    cascade_key = "workspaces"
    archive_takes_along = ARCHIVE_TAKES_ALONG["workspaces"]
    archive_service = staticmethod(services.archive_workspace)
    unarchive_service = staticmethod(services.unarchive_workspace)
    archive_preview = staticmethod(selectors.workspace_archive_preview)
    unarchive_preview = staticmethod(selectors.workspace_unarchive_preview)
    delete_service = staticmethod(services.delete_workspace)

    def get_queryset(self, request):
        return selectors.workspaces_with_live_counts(super().get_queryset(request))

    @admin.display(description="project", ordering="project__display_name")
    def project_link(self, obj):
        return obj.project.display_name
