"""Agents as the registry's records under workspaces (see ``registry.cascade``).

Registered in ``SnapshotsConfig.ready()``. The registry's archive and
unarchive services call these inside their own transactions, after locking
the workspaces, so the locking order stays parents first.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from typing import Literal

from django.db.models import Expression, QuerySet, Sum

from registry.cascade import Counted, DeletionScope
from registry.models import Workspace
from registry.selectors import count_subquery
from snapshots.models import AgentSnapshot
from snapshots.selectors import lifecycles_an_archive_closes, lifecycles_an_unarchive_restores
from snapshots.services import archive_agent_rows, notify_agents_changed, restore_archived_agents

#: The path from an agent to the records a hard delete starts from.
_AGENT_LOOKUP = {"projects": "workspace__project__in", "workspaces": "workspace__in", "agents": "pk__in"}
#: The path from an agent to the outer project or workspace row of a per-record annotation.
_OUTER_FIELD = {"project": "workspace__project", "workspace": "workspace"}


def _live_under(workspaces: QuerySet[Workspace]) -> QuerySet[AgentSnapshot]:
    return AgentSnapshot.objects.live().filter(workspace__in=workspaces.values("pk"))


def _ids_and_closed(agents: QuerySet[AgentSnapshot]) -> tuple[list[str], dict[str, int]]:
    """The agents' ids, and the lifecycles archiving them closes (lifecycle: how many), from one read."""
    rows = list(agents.values_list("agent_id", "lifecycle"))
    counts = Counter(lifecycle for _, lifecycle in rows if lifecycle != AgentSnapshot.Lifecycle.CLOSED)
    closed = {value: counts[value] for value in AgentSnapshot.Lifecycle.values if counts[value]}
    return [agent_id for agent_id, _ in rows], closed


class AgentsUnderWorkspaces:
    """``registry.cascade.RecordsUnderWorkspaces`` for agent snapshots."""

    def archive_live(self, *, workspaces: QuerySet[Workspace], operation: uuid.UUID, now: dt.datetime) -> Counted:
        # Read first, then update by primary key: the ids are needed for the
        # live stream's notification, and the lifecycles for the report.
        agent_ids, closed = _ids_and_closed(_live_under(workspaces))
        if not agent_ids:
            return Counted()
        archived = archive_agent_rows(AgentSnapshot.objects.filter(pk__in=agent_ids), operation, now)
        notify_agents_changed(agent_ids, "archived")
        return Counted(records=archived, states=closed)

    def unarchive(self, *, operation: uuid.UUID) -> Counted:
        restored, agent_ids, reopened = restore_archived_agents(operation)
        notify_agents_changed(agent_ids, "unarchived")
        return Counted(records=restored, states=reopened)

    def count_live(self, *, workspaces: QuerySet[Workspace]) -> Counted:
        live = _live_under(workspaces)
        return Counted(records=live.count(), states=lifecycles_an_archive_closes(live))

    def count_archived(self, *, operation: uuid.UUID) -> Counted:
        archived = AgentSnapshot.objects.filter(archive_operation=operation)
        return Counted(records=archived.count(), states=lifecycles_an_unarchive_restores(archived))

    def live_count(self, *, per: Literal["project", "workspace"]) -> Expression:
        return count_subquery(AgentSnapshot.objects.live(), _OUTER_FIELD[per])

    def growth(self, *, per: Literal["project", "workspace"]) -> dict[str, Expression]:
        agents, outer_field = AgentSnapshot.objects.all(), _OUTER_FIELD[per]
        return {
            "stats_agents": count_subquery(agents, outer_field),
            "stats_timeline_rows": count_subquery(agents, outer_field, Sum("timeline_head__committed_rows")),
            "stats_timeline_bytes": count_subquery(agents, outer_field, Sum("timeline_head__committed_bytes")),
        }


def count_agents_deleted_with(scope: DeletionScope) -> int:
    """The agents a hard delete of ``scope`` removes (``registry.cascade.DeletionCounter``)."""
    return AgentSnapshot.objects.filter(**{_AGENT_LOOKUP[scope.kind]: scope.ids}).count()
