"""Agents as the registry's records under workspaces (see ``registry.cascade``).

Registered in ``SnapshotsConfig.ready()``. The registry's archive and
unarchive services call these inside their own transactions, after locking
the workspaces, so the locking order stays parents first.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Literal

from django.db.models import BigIntegerField, Count, Expression, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from registry.cascade import Counted, DeletionScope
from registry.models import Workspace
from registry.selectors import count_subquery
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent_rows, notify_agents_changed, restore_archived_agents

#: The path from an agent to the records a hard delete starts from.
_AGENT_LOOKUP = {"projects": "workspace__project__in", "workspaces": "workspace__in", "agents": "pk__in"}


def _live_under(workspaces: QuerySet[Workspace]) -> QuerySet[AgentSnapshot]:
    return AgentSnapshot.objects.live().filter(workspace__in=workspaces.values("pk"))


def _ids_and_running(agents: QuerySet[AgentSnapshot]) -> tuple[list[str], int]:
    rows = list(agents.values_list("agent_id", "lifecycle"))
    running = sum(1 for _, lifecycle in rows if lifecycle == AgentSnapshot.Lifecycle.RUNNING)
    return [agent_id for agent_id, _ in rows], running


class AgentsUnderWorkspaces:
    """``registry.cascade.RecordsUnderWorkspaces`` for agent snapshots."""

    def archive_live(self, *, workspaces: QuerySet[Workspace], operation: uuid.UUID, now: dt.datetime) -> Counted:
        # Read first, then update by primary key: the ids are needed for the
        # live stream's notification, and the running count for the report.
        agent_ids, running = _ids_and_running(_live_under(workspaces))
        if not agent_ids:
            return Counted()
        archived = archive_agent_rows(AgentSnapshot.objects.filter(pk__in=agent_ids), operation, now)
        notify_agents_changed(agent_ids, "archived")
        return Counted(records=archived, running=running)

    def unarchive(self, *, operation: uuid.UUID) -> int:
        restored, agent_ids = restore_archived_agents(operation)
        notify_agents_changed(agent_ids, "unarchived")
        return restored

    def count_live(self, *, workspaces: QuerySet[Workspace]) -> Counted:
        counts = _live_under(workspaces).aggregate(
            records=Count("pk"), running=Count("pk", filter=Q(lifecycle=AgentSnapshot.Lifecycle.RUNNING))
        )
        return Counted(records=counts["records"], running=counts["running"])

    def count_archived(self, *, operation: uuid.UUID) -> int:
        return AgentSnapshot.objects.filter(archive_operation=operation).count()

    def live_count(self, *, per: Literal["project", "workspace"]) -> Expression:
        outer_field = {"project": "workspace__project", "workspace": "workspace"}[per]
        return count_subquery(AgentSnapshot.objects.live(), outer_field)

    def growth(self, *, per: Literal["project", "workspace"]) -> dict[str, Expression]:
        outer_field = {"project": "workspace__project", "workspace": "workspace"}[per]

        def total(aggregate) -> Expression:
            summed = (
                AgentSnapshot.objects.filter(**{outer_field: OuterRef("pk")})
                .order_by()
                .values(outer_field)
                .annotate(total=aggregate)
                .values("total")
            )
            return Coalesce(Subquery(summed, output_field=BigIntegerField()), 0)

        return {
            "stats_agents": total(Count("pk")),
            "stats_timeline_rows": total(Sum("timeline_head__committed_rows")),
            "stats_timeline_bytes": total(Sum("timeline_head__committed_bytes")),
        }


def count_agents_deleted_with(scope: DeletionScope) -> int:
    """The agents a hard delete of ``scope`` removes (``registry.cascade.DeletionCounter``)."""
    return AgentSnapshot.objects.filter(**{_AGENT_LOOKUP[scope.kind]: scope.ids}).count()
