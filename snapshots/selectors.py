"""Reads of agent snapshots that need thought. Nothing here writes."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db.models import BooleanField, Case, Count, Expression, F, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce, Greatest
from django.db.models.lookups import IsNull, LessThan
from django.utils import timezone

from kernel.errors import NotFound
from registry.models import Workspace
from registry.selectors import ArchivePreview, UnarchivePreview
from snapshots.models import ACTIVE_LIFECYCLES, AGENT_ID_RE, AgentSnapshot

#: The agent's timeline head (``timeline.models.TimelineHead``, one per agent), by the
#: reverse name it declares: the API shows its seqs and counters with the agent, read in
#: the same query. Named here, never imported: the timeline builds on snapshots.
TIMELINE_HEAD = "timeline_head"


def last_sign_of_life() -> Expression:
    """When the agent last gave a sign of life: its creation, an update or a heartbeat
    (``last_seen_at``), or an append of its own (the head's ``last_appended_at``),
    whichever came last; NULL when neither ever did. Coalesced both ways because
    SQLite's GREATEST is NULL as soon as one argument is."""
    seen, appended = F("last_seen_at"), F(f"{TIMELINE_HEAD}__last_appended_at")
    return Greatest(Coalesce(seen, appended), Coalesce(appended, seen))


def stale_condition(*, now: dt.datetime | None = None) -> Q:
    """Live agents claiming to run that have given no sign of life for ``CHARTR_STALE_AFTER_SECONDS``.

    Computed from the database at read time, so no background job is needed
    to see it; ``mark_stale_agents`` only acts on it.
    """
    cutoff = (now or timezone.now()) - dt.timedelta(seconds=settings.CHARTR_STALE_AFTER_SECONDS)
    seen = last_sign_of_life()
    return Q(lifecycle__in=ACTIVE_LIFECYCLES, archived_at__isnull=True) & (
        Q(IsNull(seen, True)) | Q(LessThan(seen, cutoff))
    )


def with_staleness(agents: QuerySet[AgentSnapshot], *, now: dt.datetime | None = None) -> QuerySet[AgentSnapshot]:
    """``agents`` annotated with ``is_stale``."""
    return agents.annotate(
        is_stale=Case(
            When(stale_condition(now=now), then=Value(True)), default=Value(False), output_field=BooleanField()
        )
    )


def stale_agents(*, now: dt.datetime | None = None) -> QuerySet[AgentSnapshot]:
    """The stale agents, longest silent first (never heard from before all)."""
    return (
        AgentSnapshot.objects.filter(stale_condition(now=now))
        .annotate(seen_at=last_sign_of_life())
        .order_by(F("seen_at").asc(nulls_first=True), "agent_id")
    )


def agents_for_api() -> QuerySet[AgentSnapshot]:
    """Agents as the API shows them: with their project's id, timeline head, last sign of
    life and staleness, read in the same query."""
    agents = AgentSnapshot.objects.select_related(TIMELINE_HEAD).annotate(
        api_project_id=F("workspace__project_id"), seen_at=last_sign_of_life()
    )
    return with_staleness(agents)


def agent_for_api(*, agent_id: str) -> AgentSnapshot:
    """One agent as the API shows it; NotFound when there is none."""
    # Ids that cannot exist never reach the database (think NUL bytes).
    agent = agents_for_api().filter(pk=agent_id).first() if AGENT_ID_RE.fullmatch(agent_id) else None
    if agent is None:
        raise NotFound(f"Agent {agent_id[:128]!r} does not exist.")
    return agent


def _by_lifecycle(agents: QuerySet[AgentSnapshot], field: str) -> dict[str, int]:
    """How many of ``agents`` have each lifecycle in ``field``, in the lifecycles' own order. One query."""
    counts = dict(agents.order_by().values_list(field).annotate(n=Count("pk")))
    return {value: counts[value] for value in AgentSnapshot.Lifecycle.values if counts.get(value)}


def lifecycles_an_archive_closes(agents: QuerySet[AgentSnapshot]) -> dict[str, int]:
    """The lifecycles archiving ``agents`` takes them out of: every one but ``closed``."""
    return _by_lifecycle(agents.exclude(lifecycle=AgentSnapshot.Lifecycle.CLOSED), "lifecycle")


def lifecycles_an_unarchive_restores(agents: QuerySet[AgentSnapshot]) -> dict[str, int]:
    """The lifecycles unarchiving ``agents`` puts them back in: those their archive closed them from."""
    closed_by_the_archive = agents.filter(lifecycle=AgentSnapshot.Lifecycle.CLOSED).exclude(
        Q(lifecycle_before_archive__isnull=True) | Q(lifecycle_before_archive=AgentSnapshot.Lifecycle.CLOSED)
    )
    return _by_lifecycle(closed_by_the_archive, "lifecycle_before_archive")


def agent_archive_preview(*, agent: AgentSnapshot) -> ArchivePreview:
    """What ``archive_agent`` would take: the agent itself, closed (unless it already is)."""
    if agent.is_archived:
        return ArchivePreview()
    return ArchivePreview(
        agents=1, closed_agents=lifecycles_an_archive_closes(AgentSnapshot.objects.filter(pk=agent.pk))
    )


def agent_unarchive_preview(*, agent: AgentSnapshot) -> UnarchivePreview:
    """What ``unarchive_agent`` would restore: the agents carrying its archive operation,
    or the archived workspace that forbids it."""
    if not agent.is_archived:
        return UnarchivePreview()
    agents = AgentSnapshot.objects.filter(archive_operation=agent.archive_operation)
    workspace = Workspace.objects.filter(pk=agent.workspace_id, archived_at__isnull=False).first()
    return UnarchivePreview(
        agents=agents.count(),
        reopened_agents=lifecycles_an_unarchive_restores(agents),
        blocked_by=str(workspace) if workspace else "",
    )


#: Agents needing attention in the order an operator takes them: the longest waiting first
#: (those whose wait began at an unknown time, such as imported ones, after every known one).
#: The admin's attention filter lists them so, as the dashboard does.
LONGEST_WAITING_FIRST = (F("attention_at").asc(nulls_last=True), "created_at", "agent_id")

#: The attention filter's value for agents needing attention without a reason (Paseo allows it).
NO_REASON = "none"


def attention_condition(reason: str | None = None) -> Q:
    """Live agents needing attention; for one ``reason`` (``NO_REASON``: without a reason) when given."""
    condition = Q(archived_at__isnull=True, requires_attention=True)
    if reason == NO_REASON:
        return condition & Q(attention_reason__isnull=True)
    return condition & Q(attention_reason=reason) if reason else condition


def attention_counts() -> dict[str, Any]:
    """The aggregate expressions counting live agents needing attention, in all and per reason
    (``attention``, ``attention_<reason>``, ``attention_none``), for a caller's one aggregate query."""
    reasons = [*AgentSnapshot.AttentionReason.values, NO_REASON]
    return {
        "attention": Count("pk", filter=attention_condition()),
        **{f"attention_{reason}": Count("pk", filter=attention_condition(reason)) for reason in reasons},
    }


#: Children the agent page lists (the page says how many more there are).
CHILDREN_SHOWN = 50


def agent_descendants(agent_ids: list[str]) -> list[str]:
    """The ids of every agent under these (children, their children, ...): what deleting them takes along.

    One query per level of the tree (a Claude Code session has one: its subagents)."""
    found: list[str] = []
    seen = set(agent_ids)
    frontier = list(agent_ids)
    while frontier:
        children = AgentSnapshot.objects.filter(parent__in=frontier).values_list("pk", flat=True)
        frontier = [pk for pk in children if pk not in seen]
        seen.update(frontier)
        found.extend(frontier)
    return found


def agent_children(*, agent: AgentSnapshot) -> tuple[list[AgentSnapshot], int]:
    """The first ``CHILDREN_SHOWN`` agents under ``agent`` (by creation), and how many there are: two queries."""
    children = AgentSnapshot.objects.filter(parent=agent).order_by("created_at", "agent_id")
    return list(children.only("agent_id", "title", "lifecycle")[:CHILDREN_SHOWN]), children.count()
