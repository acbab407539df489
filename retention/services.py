"""Purging archived records. Every destructive step is preceded by a data snapshot."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone

from kernel.checkpoints import take_checkpoint
from registry.services import delete_archived_registry
from retention.selectors import PurgeCounts
from snapshots.services import delete_archived_agents
from timeline.services import delete_rows_of_archived_agents


@dataclass(frozen=True)
class PurgeResult:
    counts: PurgeCounts
    #: The ``pre-purge`` data snapshot: restoring it undoes the purge.
    snapshot: str


def purge_cutoff(*, older_than_days: int, now: dt.datetime | None = None) -> dt.datetime:
    if older_than_days < 0:
        raise ValueError("older_than_days cannot be negative")
    return (now or timezone.now()) - dt.timedelta(days=older_than_days)


def purge_archived(*, archived_before: dt.datetime) -> PurgeResult:
    """Hard-delete the projects, workspaces and agents archived before ``archived_before``, with their cascade.

    A ``pre-purge`` data snapshot is taken first (refused when snapshots are
    disabled). The rows go in short batches, deepest first (timeline rows,
    agents, then workspaces and projects), so the API never waits for more
    than one batch; each batch checks the archive time again, so a record
    unarchived meanwhile is left alone.
    """
    snapshot = take_checkpoint(reason="pre-purge", note=f"before purging what was archived before {archived_before}")
    timeline_rows = delete_rows_of_archived_agents(archived_before=archived_before)
    agents = delete_archived_agents(archived_before=archived_before)
    workspaces, projects = delete_archived_registry(archived_before=archived_before)
    counts = PurgeCounts(projects=projects, workspaces=workspaces, agents=agents, timeline_rows=timeline_rows)
    return PurgeResult(counts=counts, snapshot=snapshot)
