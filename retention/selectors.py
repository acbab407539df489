"""What a purge would remove. Nothing here writes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow


@dataclass(frozen=True)
class PurgeCounts:
    projects: int = 0
    workspaces: int = 0
    agents: int = 0
    timeline_rows: int = 0

    def lines(self) -> list[str]:
        return [
            f"projects: {self.projects}",
            f"workspaces: {self.workspaces}",
            f"agents: {self.agents}",
            f"timeline rows: {self.timeline_rows}",
        ]


def purge_preview(*, archived_before: dt.datetime) -> PurgeCounts:
    """Everything archived before ``archived_before``. A child of a purged record was archived
    with it or earlier (nothing is added to, or unarchived in, an archived parent), so one
    cutoff per level counts the whole cascade."""
    return PurgeCounts(
        projects=Project.objects.filter(archived_at__lt=archived_before).count(),
        workspaces=Workspace.objects.filter(archived_at__lt=archived_before).count(),
        agents=AgentSnapshot.objects.filter(archived_at__lt=archived_before).count(),
        timeline_rows=TimelineRow.objects.filter(agent__archived_at__lt=archived_before).count(),
    )
