"""Reads of projects and workspaces that need thought. Nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from registry.directories import normalize_directory
from registry.models import Project, Workspace


def project_by_directory(*, directory: str) -> Project | None:
    """Look a project up by its directory. Never creates one."""
    try:
        normalized = normalize_directory(directory)
    except ValidationError:
        return None
    return Project.objects.filter(directory=normalized).first()


def workspace_by_directory(*, directory: str) -> Workspace | None:
    """Look a workspace up by its directory. Never creates one."""
    try:
        normalized = normalize_directory(directory)
    except ValidationError:
        return None
    return Workspace.objects.filter(directory=normalized).first()


# --- Admin reads ------------------------------------------------------------
# Counts are correlated subqueries rather than JOIN + COUNT: a list page then
# costs one query whatever its size, and counting workspaces and agents side
# by side cannot multiply one by the other.


def _count_subquery(queryset, outer_field: str):
    from django.db.models import Count, IntegerField, OuterRef, Subquery
    from django.db.models.functions import Coalesce

    counted = (
        queryset.filter(**{outer_field: OuterRef("pk")})
        .order_by()
        .values(outer_field)
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def projects_with_live_counts(queryset=None):
    """Projects annotated with ``live_workspace_count`` and ``live_agent_count``."""
    from snapshots.models import AgentSnapshot

    queryset = Project.objects.all() if queryset is None else queryset
    return queryset.annotate(
        live_workspace_count=_count_subquery(Workspace.objects.live(), "project"),
        live_agent_count=_count_subquery(AgentSnapshot.objects.live(), "workspace__project"),
    )


def workspaces_with_live_counts(queryset=None):
    """Workspaces annotated with ``live_agent_count``, their project joined in."""
    from snapshots.models import AgentSnapshot

    queryset = Workspace.objects.all() if queryset is None else queryset
    return queryset.select_related("project").annotate(
        live_agent_count=_count_subquery(AgentSnapshot.objects.live(), "workspace"),
    )


@dataclass(frozen=True)
class UnarchivePreview:
    """What an unarchive would restore; ``blocked_by`` names an archived parent that forbids it."""

    workspaces: int = 0
    agents: int = 0
    blocked_by: str = ""


def unarchive_preview(obj) -> UnarchivePreview:
    """What ``unarchive_project/workspace/agent`` would restore: exactly the rows
    carrying the record's archive operation (see the services)."""
    from snapshots.models import AgentSnapshot

    if obj.archived_at is None:
        return UnarchivePreview()
    agents = AgentSnapshot.objects.filter(archive_operation=obj.archive_operation).count()
    if isinstance(obj, Project):
        workspaces = Workspace.objects.filter(archive_operation=obj.archive_operation).count()
        return UnarchivePreview(workspaces=workspaces, agents=agents)
    if isinstance(obj, Workspace):
        project = Project.objects.filter(pk=obj.project_id, archived_at__isnull=False).first()
        return UnarchivePreview(workspaces=1, agents=agents, blocked_by=str(project) if project else "")
    workspace = Workspace.objects.filter(pk=obj.workspace_id, archived_at__isnull=False).first()
    return UnarchivePreview(agents=agents, blocked_by=str(workspace) if workspace else "")


@dataclass(frozen=True)
class DeletionCascade:
    """What a hard delete takes with it."""

    projects: int = 0
    workspaces: int = 0
    agents: int = 0
    timeline_rows: int = 0


def deletion_cascade(*, projects=(), workspaces=(), agents=()) -> DeletionCascade:
    """Count what deleting these records removes: a fixed number of queries.

    Pass records of one kind; their children are counted through the foreign keys.
    """
    from snapshots.models import AgentSnapshot
    from timeline.models import TimelineRow

    project_ids = [p.pk for p in projects]
    workspace_ids = [w.pk for w in workspaces]
    agent_ids = [a.pk for a in agents]
    if project_ids:
        workspace_qs = Workspace.objects.filter(project__in=project_ids)
        agent_qs = AgentSnapshot.objects.filter(workspace__project__in=project_ids)
        rows_qs = TimelineRow.objects.filter(agent__workspace__project__in=project_ids)
    elif workspace_ids:
        workspace_qs = Workspace.objects.filter(pk__in=workspace_ids)
        agent_qs = AgentSnapshot.objects.filter(workspace__in=workspace_ids)
        rows_qs = TimelineRow.objects.filter(agent__workspace__in=workspace_ids)
    else:
        workspace_qs = Workspace.objects.none()
        agent_qs = AgentSnapshot.objects.filter(pk__in=agent_ids)
        rows_qs = TimelineRow.objects.filter(agent__in=agent_ids)
    return DeletionCascade(
        projects=len(project_ids),
        workspaces=workspace_qs.count() if workspace_ids or project_ids else 0,
        agents=agent_qs.count(),
        timeline_rows=rows_qs.count(),
    )
