"""Purging archived records. Every destructive step is preceded by a data snapshot."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone

from kernel.data_snapshots import take_data_snapshot
from kernel.errors import NotFound
from registry.services import delete_archived_registry
from retention.selectors import PurgeCounts
from snapshots.services import delete_archived_agents
from timeline.models import TimelineHead
from timeline.writes.pruning import TrimPolicy, TrimResult, delete_rows_of_archived_agents, trim_preview, trim_timeline


@dataclass(frozen=True)
class PurgeResult:
    counts: PurgeCounts
    #: The ``pre-purge`` data snapshot: restoring it undoes the purge.
    snapshot: str


def older_than_cutoff(*, older_than_days: int, now: dt.datetime | None = None) -> dt.datetime:
    """The time ``older_than_days`` days ago: both commands' ``--older-than``."""
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
    snapshot = take_data_snapshot(reason="pre-purge", note=f"before purging what was archived before {archived_before}")
    timeline_rows = delete_rows_of_archived_agents(archived_before=archived_before)
    agents = delete_archived_agents(archived_before=archived_before)
    workspaces, projects = delete_archived_registry(archived_before=archived_before)
    counts = PurgeCounts(projects=projects, workspaces=workspaces, agents=agents, timeline_rows=timeline_rows)
    return PurgeResult(counts=counts, snapshot=snapshot)


@dataclass(frozen=True)
class TrimReport:
    trimmed: list[TrimResult]
    #: The ``pre-trim`` data snapshot, or None when there was nothing to trim (and so nothing was taken).
    snapshot: str | None


def trim_plan(*, agent_ids: list[str] | None, policy: TrimPolicy) -> dict[str, int]:
    """Rows each agent would lose now, for those losing any (``agent_ids`` None: every agent). Writes nothing."""
    heads = TimelineHead.objects.order_by("agent_id")
    if agent_ids is not None:
        heads = heads.filter(pk__in=agent_ids)
        missing = sorted(set(agent_ids) - set(heads.values_list("agent_id", flat=True)))
        if missing:
            raise NotFound(f"Agent {missing[0]} does not exist.")
    plan = {head.agent_id: trim_preview(head=head, policy=policy) for head in heads.iterator(500)}
    return {agent_id: rows for agent_id, rows in plan.items() if rows}


def trim_timelines(*, agent_ids: list[str] | None, policy: TrimPolicy) -> TrimReport:
    """Trim the agents' oldest rows by ``policy``, after a ``pre-trim`` snapshot (none when nothing would go).

    Each agent is trimmed in its own short batches (``timeline.writes.pruning``), so
    the API never waits for more than one.
    """
    plan = trim_plan(agent_ids=agent_ids, policy=policy)
    if not plan:
        return TrimReport(trimmed=[], snapshot=None)
    snapshot = take_data_snapshot(reason="pre-trim", note=f"before trimming {len(plan)} agent(s)")
    trimmed = [trim_timeline(agent_id=agent_id, policy=policy) for agent_id in plan]
    return TrimReport(trimmed=[result for result in trimmed if result.rows], snapshot=snapshot)
