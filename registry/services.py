"""Every write to projects and workspaces. Admin, API and commands call these.

The agents under the workspaces are archived and restored through
``registry.cascade`` (registered by snapshots), so the registry imports no app above it.
"""

from __future__ import annotations

import datetime as dt
import uuid

from django.db import IntegrityError, transaction
from django.utils import timezone

from kernel.errors import ArchivedConflict
from kernel.services import UNSET, insert_carried_over, lock_for_update, reset_id_sequences, validate_fields
from registry.cascade import ArchiveResult, UnarchiveResult, records_under_workspaces
from registry.directories import directories_above, last_segment, normalize_directory
from registry.errors import DuplicateDirectory
from registry.models import Project, Workspace


def _duplicate(model: type[Project] | type[Workspace], directory: str) -> DuplicateDirectory:
    return DuplicateDirectory(
        f"A {model._meta.verbose_name} with directory {directory!r} already exists.", extra={"directory": directory}
    )


def _ensure_directory_free(model: type[Project] | type[Workspace], directory: str) -> None:
    if model.objects.at_directory(directory).exists():
        raise _duplicate(model, directory)


def _save_new(instance: Project | Workspace) -> None:
    """Insert, turning a lost race on the unique directory into the same clean error."""
    try:
        with transaction.atomic():
            instance.save(force_insert=True)
    except IntegrityError as exc:
        if type(instance).objects.at_directory(instance.directory).exists():
            raise _duplicate(type(instance), instance.directory) from exc
        raise


# --- Projects -------------------------------------------------------------


def create_project(
    *, directory: str, kind: str, display_name: str | None = None, git_remote: str | None = None
) -> Project:
    directory = normalize_directory(directory)
    project = Project(
        directory=directory,
        kind=kind,
        display_name=display_name or last_segment(directory),
        git_remote=git_remote or "",
    )
    validate_fields(project)
    with transaction.atomic():
        _ensure_directory_free(Project, directory)
        _save_new(project)
    return project


def _update_live(model: type[Project] | type[Workspace], pk: int, **changes) -> Project | Workspace:
    """Set the ``changes`` given (not ``UNSET``; None is "") on a live record; an archived one is refused."""
    with transaction.atomic():
        record = lock_for_update(model, pk)
        if record.is_archived:
            raise ArchivedConflict(
                f"{model._meta.verbose_name.capitalize()} {pk} is archived; unarchive it before changing it."
            )
        for name, value in changes.items():
            if value is not UNSET:
                setattr(record, name, "" if value is None else value)
        validate_fields(record)
        record.save()
    return record


def update_project(*, project: Project, display_name: str = UNSET, git_remote: str | None = UNSET) -> Project:
    return _update_live(Project, project.pk, display_name=display_name, git_remote=git_remote)


def archive_project(*, project: Project) -> ArchiveResult:
    """Archive the project, its live workspaces and their live agents, at once.

    The cost is a fixed number of queries: one read of the affected agents and
    one UPDATE per table, however many rows they touch. Every record the
    cascade takes is stamped with the same operation id so that
    ``unarchive_project`` can restore exactly those. Archiving an archived
    project changes nothing. ``registry.selectors.project_archive_preview``
    counts the same records without writing.
    """
    with transaction.atomic():
        project = lock_for_update(Project, project.pk)
        if project.is_archived:
            return ArchiveResult()
        workspaces = Workspace.objects.filter(project=project).live()
        # Lock the live workspaces before reading their agents: create_agent
        # locks its workspace too, so an agent is either already there to be
        # archived or created after this commits, into an archived workspace
        # (and refused). Without it, PostgreSQL could leave a live agent
        # behind in an archived workspace. (SQLite serialises writers anyway.)
        list(workspaces.select_for_update().values_list("pk", flat=True))
        operation, now = uuid.uuid4(), timezone.now()
        agents = records_under_workspaces().archive_live(workspaces=workspaces, operation=operation, now=now)
        archived_workspaces = workspaces.update(archived_at=now, archive_operation=operation, updated_at=now)
        Project.objects.filter(pk=project.pk).update(archived_at=now, archive_operation=operation, updated_at=now)
    return ArchiveResult(
        workspaces=archived_workspaces, agents=agents.records, closed_agents=agents.states, changed=True
    )


def unarchive_project(*, project: Project) -> UnarchiveResult:
    """Restore the project and exactly the workspaces and agents its archive took."""
    with transaction.atomic():
        project = lock_for_update(Project, project.pk)
        if not project.is_archived:
            return UnarchiveResult()
        operation = project.archive_operation
        restored_agents = records_under_workspaces().unarchive(operation=operation)
        now = timezone.now()
        restored_workspaces = Workspace.objects.filter(archive_operation=operation).update(
            archived_at=None, archive_operation=None, updated_at=now
        )
        Project.objects.filter(pk=project.pk).update(archived_at=None, archive_operation=None, updated_at=now)
    return UnarchiveResult(
        workspaces=restored_workspaces,
        agents=restored_agents.records,
        reopened_agents=restored_agents.states,
        changed=True,
    )


def delete_project(*, project: Project) -> None:
    """Hard delete for operators: workspaces, agents and timelines go with it (one transaction: delete()'s own)."""
    Project.objects.filter(pk=project.pk).delete()


# --- Workspaces -----------------------------------------------------------


def create_workspace(
    *,
    project: Project,
    directory: str,
    kind: str,
    display_name: str | None = None,
    branch: str | None = None,
) -> Workspace:
    directory = normalize_directory(directory)
    with transaction.atomic():
        project = lock_for_update(Project, project.pk)
        if project.is_archived:
            raise ArchivedConflict(f"Project {project.pk} is archived; workspaces cannot be added to it.")
        workspace = Workspace(
            project=project,
            directory=directory,
            kind=kind,
            display_name=display_name or last_segment(directory),
            branch=branch or "",
        )
        validate_fields(workspace)
        _ensure_directory_free(Workspace, directory)
        _save_new(workspace)
    return workspace


def workspace_for_directory(directory: str, *, git_remote: str | None = None, branch: str | None = None) -> Workspace:
    """The workspace an agent working in ``directory`` belongs to, by the one rule for a cwd.

    The deepest workspace at ``directory`` or above it; where there is none, a new ``checkout``
    workspace at ``directory`` in the ``directory`` project there (created too when missing, with
    ``git_remote`` and ``branch`` when the caller knows them; an existing record is never changed). The
    importers and the clients that register their own agents place a cwd with this. Safe to
    repeat, and to race: a writer that loses the race for the new directory reads the winner's.
    """
    directory = normalize_directory(directory)
    for _attempt in range(2):
        found = _deepest_workspace_at_or_above(directory)
        if found is not None:
            return found
        try:
            with transaction.atomic():
                project = Project.objects.at_directory(directory).first()
                if project is None:
                    project = create_project(directory=directory, kind=Project.Kind.DIRECTORY, git_remote=git_remote)
                return create_workspace(
                    project=project, directory=directory, kind=Workspace.Kind.CHECKOUT, branch=branch
                )
        except DuplicateDirectory:
            continue  # another writer placed the same directory first: read theirs
    raise DuplicateDirectory(f"Directory {directory} was created and removed while it was being placed.")


def _deepest_workspace_at_or_above(directory: str) -> Workspace | None:
    candidates = [directory, *directories_above(directory)]
    found = {w.directory: w for w in Workspace.objects.at_directories(candidates).select_related("project")}
    return next((found[d] for d in candidates if d in found), None)


def update_workspace(*, workspace: Workspace, display_name: str = UNSET, branch: str | None = UNSET) -> Workspace:
    return _update_live(Workspace, workspace.pk, display_name=display_name, branch=branch)


def archive_workspace(*, workspace: Workspace) -> ArchiveResult:
    """Archive the workspace and its live agents; archiving an archived workspace changes nothing.

    ``registry.selectors.workspace_archive_preview`` counts the same records without writing.
    """
    with transaction.atomic():
        # Locked before its agents are read, for the reason given in archive_project.
        workspace = lock_for_update(Workspace, workspace.pk)
        if workspace.is_archived:
            return ArchiveResult()
        operation, now = uuid.uuid4(), timezone.now()
        agents = records_under_workspaces().archive_live(
            workspaces=Workspace.objects.filter(pk=workspace.pk), operation=operation, now=now
        )
        Workspace.objects.filter(pk=workspace.pk).update(archived_at=now, archive_operation=operation, updated_at=now)
    return ArchiveResult(workspaces=1, agents=agents.records, closed_agents=agents.states, changed=True)


def unarchive_workspace(*, workspace: Workspace) -> UnarchiveResult:
    with transaction.atomic():
        workspace = lock_for_update(Workspace, workspace.pk)
        if not workspace.is_archived:
            return UnarchiveResult()
        # Locked, not just read: a concurrent archive_project must not archive
        # the project between this check and the commit.
        if lock_for_update(Project, workspace.project_id).is_archived:
            raise ArchivedConflict(
                f"Workspace {workspace.pk} belongs to archived project {workspace.project_id}; "
                "unarchive the project instead."
            )
        restored_agents = records_under_workspaces().unarchive(operation=workspace.archive_operation)
        Workspace.objects.filter(pk=workspace.pk).update(
            archived_at=None, archive_operation=None, updated_at=timezone.now()
        )
    return UnarchiveResult(
        workspaces=1, agents=restored_agents.records, reopened_agents=restored_agents.states, changed=True
    )


def delete_workspace(*, workspace: Workspace) -> None:
    Workspace.objects.filter(pk=workspace.pk).delete()


# --- Retention --------------------------------------------------------------


def delete_archived_registry(*, archived_before: dt.datetime) -> tuple[int, int]:
    """Hard-delete the workspaces, then the projects, archived before ``archived_before``.

    The purge removes their agents first, in batches; what is left (normally
    nothing) goes with them through the foreign keys. Returns (workspaces, projects).
    """
    _, by_model = Workspace.objects.filter(archived_at__lt=archived_before).delete()
    workspaces = by_model.get(Workspace._meta.label, 0)
    _, by_model = Project.objects.filter(archived_at__lt=archived_before).delete()
    workspaces += by_model.get(Workspace._meta.label, 0)
    return workspaces, by_model.get(Project._meta.label, 0)


# --- Imported ---------------------------------------------------------------

#: What an import (``legacy``'s Paseo importer) carries onto a project or workspace it updates.
IMPORTED_PROJECT_FIELDS = [
    "kind",
    "display_name",
    "git_remote",
    "extra",
    "updated_at",
    "archived_at",
    "archive_operation",
]
IMPORTED_WORKSPACE_FIELDS = [
    "kind",
    "display_name",
    "branch",
    "worktree_root",
    "extra",
    "updated_at",
    "archived_at",
    "archive_operation",
]
IMPORT_BATCH = 500


def import_projects(*, new: list[Project] = (), changed: list[Project] = ()) -> None:
    """Write the projects an import checked, inside its transaction: ``new`` inserted with the
    times, ``extra`` and archive state they carry (their ids set on them), ``changed`` updated in
    ``IMPORTED_PROJECT_FIELDS``. Batched; the caller has locked ``changed`` and matched every
    record to its directory, so none clashes."""
    insert_carried_over(Project, list(new), batch_size=IMPORT_BATCH)
    Project.objects.bulk_update(list(changed), IMPORTED_PROJECT_FIELDS, batch_size=IMPORT_BATCH)


def import_workspaces(*, new: list[Workspace] = (), changed: list[Workspace] = ()) -> None:
    """``import_projects`` for workspaces (``IMPORTED_WORKSPACE_FIELDS``); their projects exist."""
    insert_carried_over(Workspace, list(new), batch_size=IMPORT_BATCH)
    Workspace.objects.bulk_update(list(changed), IMPORTED_WORKSPACE_FIELDS, batch_size=IMPORT_BATCH)


# --- Carried over -----------------------------------------------------------


def carry_over_registry(*, projects: list[Project] = (), workspaces: list[Workspace] = ()) -> None:
    """Insert projects and workspaces exactly as an instance export holds them (their ids, times,
    archive state and ``extra``), inside the caller's transaction: ``portability``'s import into an
    empty database. The id sequences then move past them, so the next create gets a fresh id."""
    insert_carried_over(Project, list(projects))
    insert_carried_over(Workspace, list(workspaces))
    reset_id_sequences(Project, Workspace)
