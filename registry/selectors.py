"""Reads of projects and workspaces that need thought. Nothing here writes.

What lives under workspaces (agents, their timelines) is reached through
``registry.cascade``, never imported: see there why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Aggregate, BigIntegerField, Count, Expression, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from registry.cascade import DeletionCascade, DeletionScope, deletion_counters, records_under_workspaces
from registry.models import Project, Workspace

# --- API reads --------------------------------------------------------------


def projects_for_api() -> QuerySet[Project]:
    """Projects as the API shows them: with their growth figures (``stats``), one query for a whole page."""
    return Project.objects.annotate(**records_under_workspaces().growth(per="project"))


def workspaces_for_api() -> QuerySet[Workspace]:
    """Workspaces as the API shows them: with their growth figures (``stats``)."""
    return Workspace.objects.annotate(**records_under_workspaces().growth(per="workspace"))


# --- Admin reads ------------------------------------------------------------
# Counts are correlated subqueries rather than JOIN + COUNT: a list page then
# costs one query whatever its size, and counting workspaces and agents side
# by side cannot multiply one by the other.


def count_subquery(queryset: QuerySet, outer_field: str, aggregate: Aggregate | None = None) -> Expression:
    """The number (or ``aggregate``) of the rows of ``queryset`` whose ``outer_field`` is the outer row, 0 when none."""
    counted = (
        queryset.filter(**{outer_field: OuterRef("pk")})
        .order_by()
        .values(outer_field)
        .annotate(n=aggregate or Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=BigIntegerField()), 0)


def projects_with_live_counts(queryset: QuerySet[Project] | None = None) -> QuerySet[Project]:
    """Projects annotated with ``live_workspace_count`` and ``live_agent_count``."""
    queryset = Project.objects.all() if queryset is None else queryset
    return queryset.annotate(
        live_workspace_count=count_subquery(Workspace.objects.live(), "project"),
        live_agent_count=records_under_workspaces().live_count(per="project"),
    )


def workspaces_with_live_counts(queryset: QuerySet[Workspace] | None = None) -> QuerySet[Workspace]:
    """Workspaces annotated with ``live_agent_count``, their project joined in."""
    queryset = Workspace.objects.all() if queryset is None else queryset
    return queryset.select_related("project").annotate(
        live_agent_count=records_under_workspaces().live_count(per="workspace"),
    )


# --- Archive and unarchive previews -------------------------------------------


@dataclass(frozen=True)
class ArchivePreview:
    """What an archive would take: the confirmation page's counts."""

    workspaces: int = 0
    agents: int = 0
    #: The agents it would close, by their lifecycle now.
    closed_agents: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class UnarchivePreview:
    """What an unarchive would restore; ``blocked_by`` names an archived parent that forbids it."""

    workspaces: int = 0
    agents: int = 0
    #: The agents it would put back in the lifecycle their archive closed, by that lifecycle.
    reopened_agents: dict[str, int] = field(default_factory=dict)
    blocked_by: str = ""


def project_archive_preview(*, project: Project) -> ArchivePreview:
    """What ``archive_project`` would take now: its live workspaces and their live agents."""
    if project.is_archived:
        return ArchivePreview()
    workspaces = Workspace.objects.filter(project=project).live()
    under = records_under_workspaces().count_live(workspaces=workspaces)
    return ArchivePreview(workspaces=workspaces.count(), agents=under.records, closed_agents=under.states)


def workspace_archive_preview(*, workspace: Workspace) -> ArchivePreview:
    """What ``archive_workspace`` would take now: the workspace and its live agents."""
    if workspace.is_archived:
        return ArchivePreview()
    under = records_under_workspaces().count_live(workspaces=Workspace.objects.filter(pk=workspace.pk))
    return ArchivePreview(workspaces=1, agents=under.records, closed_agents=under.states)


def project_unarchive_preview(*, project: Project) -> UnarchivePreview:
    """What ``unarchive_project`` would restore: exactly the rows carrying its archive operation."""
    if not project.is_archived:
        return UnarchivePreview()
    operation = project.archive_operation
    agents = records_under_workspaces().count_archived(operation=operation)
    return UnarchivePreview(
        workspaces=Workspace.objects.filter(archive_operation=operation).count(),
        agents=agents.records,
        reopened_agents=agents.states,
    )


def workspace_unarchive_preview(*, workspace: Workspace) -> UnarchivePreview:
    """What ``unarchive_workspace`` would restore, or the archived project that forbids it."""
    if not workspace.is_archived:
        return UnarchivePreview()
    agents = records_under_workspaces().count_archived(operation=workspace.archive_operation)
    project = Project.objects.filter(pk=workspace.project_id, archived_at__isnull=False).first()
    return UnarchivePreview(
        workspaces=1, agents=agents.records, reopened_agents=agents.states, blocked_by=str(project) if project else ""
    )


# --- Hard delete ----------------------------------------------------------------


def deletion_cascade(*, projects=(), workspaces=(), agents=()) -> DeletionCascade:
    """Count what deleting these records removes: a fixed number of queries.

    Pass records of one kind; their children are counted through the foreign
    keys, those outside the registry by the counters registered in
    ``registry.cascade``.
    """
    project_ids = [p.pk for p in projects]
    workspace_ids = [w.pk for w in workspaces]
    if project_ids:
        scope = DeletionScope(kind="projects", ids=project_ids)
        workspace_count = Workspace.objects.filter(project__in=project_ids).count()
    elif workspace_ids:
        scope = DeletionScope(kind="workspaces", ids=workspace_ids)
        workspace_count = Workspace.objects.filter(pk__in=workspace_ids).count()
    else:
        scope = DeletionScope(kind="agents", ids=[a.pk for a in agents])
        workspace_count = 0
    counted = {name: counter(scope) for name, counter in deletion_counters().items()}
    return DeletionCascade(projects=len(project_ids), workspaces=workspace_count, **counted)
