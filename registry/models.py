from __future__ import annotations

from django.db import models

from kernel.constraints import choices_check, normalized_directory_check
from registry.directories import MAX_DIRECTORY_LENGTH


class ArchivableQuerySet(models.QuerySet):
    def live(self):
        return self.filter(archived_at__isnull=True)

    def archived(self):
        return self.filter(archived_at__isnull=False)


class ProjectKind(models.TextChoices):
    GIT = "git", "git"
    DIRECTORY = "directory", "directory"


class WorkspaceKind(models.TextChoices):
    CHECKOUT = "checkout", "checkout"
    WORKTREE = "worktree", "worktree"


class Project(models.Model):
    Kind = ProjectKind

    directory = models.CharField(max_length=MAX_DIRECTORY_LENGTH, unique=True)
    display_name = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=ProjectKind.choices)
    git_remote = models.CharField(max_length=2048, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # The archive operation that archived this record. Records a cascade took
    # carry the same id, which is how unarchive knows exactly what to restore.
    archive_operation = models.UUIDField(null=True, blank=True, editable=False)

    objects = ArchivableQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            normalized_directory_check("directory", "project_directory_normalized", max_length=MAX_DIRECTORY_LENGTH),
            choices_check("kind", ProjectKind.choices, "project_kind_valid"),
            models.CheckConstraint(
                condition=models.Q(archived_at__isnull=True) | models.Q(archive_operation__isnull=False),
                name="project_archived_has_operation",
            ),
        ]
        indexes = [
            models.Index(fields=["archived_at", "id"], name="project_archived_id_idx"),
            models.Index(fields=["archive_operation"], name="project_archive_op_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.directory})"

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class Workspace(models.Model):
    Kind = WorkspaceKind

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="workspaces")
    directory = models.CharField(max_length=MAX_DIRECTORY_LENGTH, unique=True)
    display_name = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=WorkspaceKind.choices)
    branch = models.CharField(max_length=255, blank=True, default="")
    # Paseo's worktreeRoot: the root of the git worktree this workspace is in
    # (empty when unknown). Kept as Paseo had it; chartr derives nothing from it.
    worktree_root = models.CharField(max_length=MAX_DIRECTORY_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    archive_operation = models.UUIDField(null=True, blank=True, editable=False)

    objects = ArchivableQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            normalized_directory_check("directory", "workspace_directory_normalized", max_length=MAX_DIRECTORY_LENGTH),
            choices_check("kind", WorkspaceKind.choices, "workspace_kind_valid"),
            models.CheckConstraint(
                condition=models.Q(archived_at__isnull=True) | models.Q(archive_operation__isnull=False),
                name="workspace_archived_has_operation",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "archived_at"], name="workspace_project_archived_idx"),
            models.Index(fields=["archived_at", "id"], name="workspace_archived_id_idx"),
            models.Index(fields=["archive_operation"], name="workspace_archive_op_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.directory})"

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None
