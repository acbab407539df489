from __future__ import annotations

from django.db import models
from django.db.models.functions import Length
from django.db.models.lookups import Exact

from kernel.constraints import archived_has_operation_check, choices_check
from registry.directories import (
    DIRECTORY_HASH_LENGTH,
    MAX_DIRECTORY_LENGTH,
    directory_hash,
    normalized_directory_check,
)


class ArchivableQuerySet(models.QuerySet):
    def live(self):
        return self.filter(archived_at__isnull=True)

    def archived(self):
        return self.filter(archived_at__isnull=False)


class DirectoryQuerySet(ArchivableQuerySet):
    """Lookups by directory go through ``directory_hash``, the indexed column."""

    def at_directory(self, directory: str):
        # The directory itself is compared too, so even a sha256 collision could not match another row.
        return self.filter(directory_hash=directory_hash(directory), directory=directory)

    def at_directories(self, directories):
        return self.filter(directory_hash__in=[directory_hash(directory) for directory in directories])

    # Neither database can compute a sha256 in a constraint (SQLite has no such
    # function), so the hash follows the directory in every ORM write path:
    # save and bulk_create through DirectoryHashField.pre_save, these two here.

    def update(self, **kwargs):
        if "directory" in kwargs and "directory_hash" not in kwargs:
            directory = kwargs["directory"]
            if not isinstance(directory, str):
                raise TypeError("update(directory=...) takes a plain string, so that its directory_hash can follow.")
            kwargs["directory_hash"] = directory_hash(directory)
        return super().update(**kwargs)

    def bulk_update(self, objs, fields, batch_size=None):
        if "directory" in fields and "directory_hash" not in fields:
            objs = list(objs)
            for obj in objs:
                obj.directory_hash = directory_hash(obj.directory)
            fields = [*fields, "directory_hash"]
        return super().bulk_update(objs, fields, batch_size=batch_size)


class DirectoryHashField(models.CharField):
    """``directory_hash(instance.directory)``, set on every save and bulk insert (``pre_save``).

    With ``DirectoryQuerySet.update``/``bulk_update`` this keeps the hash
    matching on the ORM's write paths (raw SQL, and ``save(update_fields=...)``
    naming ``directory`` without ``directory_hash``, are on their own; no code
    changes a stored directory today)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", DIRECTORY_HASH_LENGTH)
        kwargs.setdefault("editable", False)
        # Filled in on save: a new, unsaved instance passes field validation without it.
        kwargs.setdefault("blank", True)
        super().__init__(*args, **kwargs)

    def pre_save(self, model_instance, add):
        value = directory_hash(model_instance.directory)
        setattr(model_instance, self.attname, value)
        return value


def directory_hash_constraints(prefix: str) -> list:
    return [
        models.UniqueConstraint(fields=["directory_hash"], name=f"{prefix}_directory_hash_unique"),
        models.CheckConstraint(
            condition=Exact(Length("directory_hash"), DIRECTORY_HASH_LENGTH), name=f"{prefix}_directory_hash_length"
        ),
    ]


#: What ``extra`` holds on a project, a workspace, an agent and a timeline row: the keys a
#: record or row came with (Paseo's, by its own names) that chartr does not model, kept as
#: they were so that an export writes them back. Written by the legacy import only; the
#: API returns it read-only.
EXTRA_HELP = "Keys the record came with that chartr does not model (from an import), as they were. Read-only."


class ProjectKind(models.TextChoices):
    GIT = "git", "git"
    DIRECTORY = "directory", "directory"


class WorkspaceKind(models.TextChoices):
    CHECKOUT = "checkout", "checkout"
    #: A plain directory, not a git checkout (Paseo's ``directory``).
    DIRECTORY = "directory", "directory"
    WORKTREE = "worktree", "worktree"


class DirectoryRecord(models.Model):
    """What a project and a workspace both are: a live or archived record at one directory."""

    # Unique through directory_hash: see registry.directories.directory_hash.
    directory = models.CharField(max_length=MAX_DIRECTORY_LENGTH)
    directory_hash = DirectoryHashField()
    display_name = models.CharField(max_length=255)
    extra = models.JSONField(default=dict, blank=True, editable=False, help_text=EXTRA_HELP)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # The archive operation that archived this record. Records a cascade took
    # carry the same id, which is how unarchive knows exactly what to restore.
    archive_operation = models.UUIDField(null=True, blank=True, editable=False)

    objects = DirectoryQuerySet.as_manager()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.display_name} ({self.directory})"

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class Project(DirectoryRecord):
    Kind = ProjectKind

    kind = models.CharField(max_length=16, choices=ProjectKind.choices)
    git_remote = models.CharField(max_length=2048, blank=True, default="")

    class Meta:
        ordering = ["id"]
        constraints = [
            normalized_directory_check("directory", "project_directory_normalized", max_length=MAX_DIRECTORY_LENGTH),
            *directory_hash_constraints("project"),
            choices_check("kind", ProjectKind.choices, "project_kind_valid"),
            archived_has_operation_check("project"),
        ]
        indexes = [
            models.Index(fields=["archived_at", "id"], name="project_archived_id_idx"),
            models.Index(fields=["archive_operation"], name="project_archive_op_idx"),
        ]


class Workspace(DirectoryRecord):
    Kind = WorkspaceKind

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="workspaces")
    kind = models.CharField(max_length=16, choices=WorkspaceKind.choices)
    branch = models.CharField(max_length=255, blank=True, default="")
    # Paseo's worktreeRoot: the root of the git worktree this workspace is in
    # (empty when unknown). Kept as Paseo had it; chartr derives nothing from it.
    worktree_root = models.CharField(max_length=MAX_DIRECTORY_LENGTH, blank=True, default="")

    class Meta:
        ordering = ["id"]
        constraints = [
            normalized_directory_check("directory", "workspace_directory_normalized", max_length=MAX_DIRECTORY_LENGTH),
            *directory_hash_constraints("workspace"),
            choices_check("kind", WorkspaceKind.choices, "workspace_kind_valid"),
            archived_has_operation_check("workspace"),
        ]
        indexes = [
            models.Index(fields=["project", "archived_at"], name="workspace_project_archived_idx"),
            models.Index(fields=["archived_at", "id"], name="workspace_archived_id_idx"),
            models.Index(fields=["archive_operation"], name="workspace_archive_op_idx"),
        ]
