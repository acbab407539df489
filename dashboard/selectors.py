"""Cross-app reads: the operator dashboard. Nothing here writes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from snapshots.selectors import (
    LONGEST_WAITING_FIRST,
    NO_REASON,
    attention_condition,
    attention_counts,
    stale_agents,
    stale_condition,
)
from timeline.models import TimelineHead, TimelineRow

#: How many agents each dashboard list shows.
DASHBOARD_LIST_SIZE = 20
#: The largest agents shown, and the days the rows-per-day chart covers.
LARGEST_AGENTS = 10
CHART_DAYS = 30


@dataclass(frozen=True)
class LiveArchivedCount:
    live: int
    archived: int


@dataclass(frozen=True)
class Growth:
    """How big the history is: the agents' counters summed, and what was committed lately."""

    timeline_rows: int
    timeline_bytes: int
    #: The agents holding the most bytes, largest first.
    largest: list[AgentSnapshot]
    #: (day in the operator's time zone, rows committed that day), oldest first, one entry per day.
    rows_per_day: list[tuple[dt.date, int]]


def growth(*, days: int = CHART_DAYS, largest: int = LARGEST_AGENTS) -> Growth:
    """Three queries: the totals come from the agents' counters, never from counting the history."""
    totals = TimelineHead.objects.aggregate(rows=Sum("committed_rows"), bytes=Sum("committed_bytes"))
    today = timezone.localdate()
    first_day = today - dt.timedelta(days=days - 1)
    since = timezone.make_aware(dt.datetime.combine(first_day, dt.time.min))
    committed = dict(
        TimelineRow.objects.filter(committed_at__gte=since)
        .annotate(day=TruncDate("committed_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    return Growth(
        timeline_rows=totals["rows"] or 0,
        timeline_bytes=totals["bytes"] or 0,
        largest=list(
            AgentSnapshot.objects.filter(timeline_head__committed_bytes__gt=0)
            .select_related("workspace__project", "timeline_head")
            .order_by("-timeline_head__committed_bytes", "agent_id")[:largest]
        ),
        rows_per_day=[(day, committed.get(day, 0)) for day in (first_day + dt.timedelta(n) for n in range(days))],
    )


@dataclass(frozen=True)
class Attention:
    """The live agents needing attention: how many, per reason, and the longest waiting."""

    total: int
    #: (reason, how many): every declared reason in its order, then ``NO_REASON``; only those with agents.
    by_reason: list[tuple[str, int]]
    #: The longest waiting first, at most the dashboard's list size.
    longest_waiting: list[AgentSnapshot] = field(default_factory=list)

    @property
    def more(self) -> int:
        """How many are not in ``longest_waiting``."""
        return self.total - len(self.longest_waiting)


@dataclass(frozen=True)
class Dashboard:
    projects: LiveArchivedCount
    workspaces: LiveArchivedCount
    #: (lifecycle, count of live agents in it), in the order the lifecycles are declared.
    agents_by_lifecycle: list[tuple[str, int]]
    archived_agents: int
    attention: Attention = field(default_factory=lambda: Attention(total=0, by_reason=[]))
    #: Agents claiming to run whose daemon has gone silent, longest silent first (the first few)...
    stale_running: list[AgentSnapshot] = field(default_factory=list)
    #: ...of this many.
    stale_total: int = 0
    recently_active: list[AgentSnapshot] = field(default_factory=list)
    growth: Growth | None = None

    @property
    def live_agents(self) -> int:
        return sum(count for _, count in self.agents_by_lifecycle)


def _live_archived(model) -> LiveArchivedCount:
    counts = model.objects.aggregate(
        live=Count("pk", filter=Q(archived_at__isnull=True)),
        archived=Count("pk", filter=Q(archived_at__isnull=False)),
    )
    return LiveArchivedCount(live=counts["live"], archived=counts["archived"])


def dashboard(*, list_size: int = DASHBOARD_LIST_SIZE) -> Dashboard:
    """Everything the admin index shows, in nine queries whatever the fleet's size.

    One aggregate counts the agents by lifecycle and those needing attention by reason."""
    live = Q(archived_at__isnull=True)
    lifecycles = [value for value, _ in AgentSnapshot.Lifecycle.choices]
    agent_counts = AgentSnapshot.objects.aggregate(
        archived=Count("pk", filter=~live),
        **{f"lc_{value}": Count("pk", filter=live & Q(lifecycle=value)) for value in lifecycles},
        **attention_counts(),
        stale=Count("pk", filter=stale_condition()),
    )
    agents = AgentSnapshot.objects.live().select_related("workspace__project", "timeline_head")
    return Dashboard(
        projects=_live_archived(Project),
        workspaces=_live_archived(Workspace),
        agents_by_lifecycle=[(value, agent_counts[f"lc_{value}"]) for value in lifecycles],
        archived_agents=agent_counts["archived"],
        attention=Attention(
            total=agent_counts["attention"],
            by_reason=[
                (reason, agent_counts[f"attention_{reason}"])
                for reason in (*AgentSnapshot.AttentionReason.values, NO_REASON)
                if agent_counts[f"attention_{reason}"]
            ],
            longest_waiting=list(agents.filter(attention_condition()).order_by(*LONGEST_WAITING_FIRST)[:list_size]),
        ),
        stale_running=list(stale_agents().select_related("workspace__project")[:list_size]),
        stale_total=agent_counts["stale"],
        recently_active=list(
            agents.filter(timeline_head__last_activity_at__isnull=False).order_by("-timeline_head__last_activity_at")[
                :list_size
            ]
        ),
        growth=growth(),
    )
