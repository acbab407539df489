"""Cross-app reads: the operator dashboard. Nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, F, Q

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from snapshots.selectors import stale_agents

#: How many agents each dashboard list shows.
DASHBOARD_LIST_SIZE = 20


@dataclass(frozen=True)
class LiveArchivedCount:
    live: int
    archived: int

    @property
    def total(self) -> int:
        return self.live + self.archived


@dataclass(frozen=True)
class Dashboard:
    projects: LiveArchivedCount
    workspaces: LiveArchivedCount
    #: (lifecycle, count of live agents in it), in the order the lifecycles are declared.
    agents_by_lifecycle: list[tuple[str, int]]
    archived_agents: int
    needing_attention: list[AgentSnapshot] = field(default_factory=list)
    #: Agents claiming to run whose daemon has gone silent, longest silent first.
    stale_running: list[AgentSnapshot] = field(default_factory=list)
    recently_active: list[AgentSnapshot] = field(default_factory=list)

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
    """Everything the admin index shows, in six queries whatever the fleet's size."""
    live = Q(archived_at__isnull=True)
    lifecycles = [value for value, _ in AgentSnapshot.Lifecycle.choices]
    agent_counts = AgentSnapshot.objects.aggregate(
        archived=Count("pk", filter=~live),
        **{f"lc_{value}": Count("pk", filter=live & Q(lifecycle=value)) for value in lifecycles},
    )
    agents = AgentSnapshot.objects.live().select_related("workspace__project")
    return Dashboard(
        projects=_live_archived(Project),
        workspaces=_live_archived(Workspace),
        agents_by_lifecycle=[(value, agent_counts[f"lc_{value}"]) for value in lifecycles],
        archived_agents=agent_counts["archived"],
        needing_attention=list(
            agents.filter(requires_attention=True).order_by(F("attention_at").desc(nulls_last=True), "-created_at")[
                :list_size
            ]
        ),
        stale_running=list(stale_agents().select_related("workspace__project")[:list_size]),
        recently_active=list(agents.filter(last_activity_at__isnull=False).order_by("-last_activity_at")[:list_size]),
    )
