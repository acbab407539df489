"""Removing committed history: the oldest rows of a timeline (trim) and the rows of purged agents.

The only writes that take rows away. Both go in short batches, each its own
transaction, so the API never waits for more than one batch. A trim keeps the
retained range exact at every commit: the rows it deletes are always the
lowest ones, and ``min_seq`` moves up past them in the same transaction, with
the growth counters (all on the agent's ``TimelineHead``). The seqs of the rows that stay never change, and
appends go on at ``head_seq + 1``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from kernel.errors import NotFound
from snapshots.models import AgentSnapshot
from timeline.items import item_bytes
from timeline.models import TimelineHead, TimelineRow

#: Rows per DELETE: each batch is its own short transaction (on SQLite, writers queue behind it).
PRUNE_BATCH_ROWS = 5000


@dataclass(frozen=True)
class TrimPolicy:
    """Which of an agent's oldest rows go: exactly one of the three is set."""

    keep: int | None = None
    before_seq: int | None = None
    older_than: dt.datetime | None = None

    def __post_init__(self) -> None:
        given = [name for name in ("keep", "before_seq", "older_than") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValidationError("Give exactly one of keep, before_seq and older_than.", code="invalid")
        if self.keep is not None and self.keep < 0:
            raise ValidationError({"keep": ["keep is 0 or more."]}, code="invalid")
        if self.before_seq is not None and self.before_seq < 1:
            raise ValidationError({"before_seq": ["before_seq is 1 or more."]}, code="invalid")

    def first_kept_seq(self, agent: TimelineHead) -> int:
        """The lowest seq this policy keeps for ``agent``'s timeline (``head_seq + 1`` keeps nothing); never
        below min_seq."""
        if self.keep is not None:
            wanted = agent.head_seq - self.keep + 1
        elif self.before_seq is not None:
            wanted = min(self.before_seq, agent.head_seq + 1)
        else:
            newer = (
                TimelineRow.objects.filter(agent_id=agent.agent_id, committed_at__gte=self.older_than)
                .order_by("seq")
                .values_list("seq", flat=True)
                .first()
            )
            wanted = newer if newer is not None else agent.head_seq + 1
        return max(wanted, agent.min_seq)


@dataclass(frozen=True)
class TrimResult:
    agent_id: str
    rows: int
    bytes: int
    min_seq: int


def trim_preview(*, head: TimelineHead, policy: TrimPolicy) -> int:
    """How many rows ``trim_timeline`` would remove now from the timeline ``head`` heads. Writes nothing."""
    return policy.first_kept_seq(head) - head.min_seq


def trim_timeline(*, agent_id: str, policy: TrimPolicy, batch_size: int = PRUNE_BATCH_ROWS) -> TrimResult:
    """Remove the agent's oldest committed rows as ``policy`` says; trimming again changes nothing.

    Archived agents can be trimmed too: retention is not a client write.
    """
    head = TimelineHead.objects.filter(pk=agent_id).first()
    if head is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    target = policy.first_kept_seq(head)
    removed_rows = removed_bytes = 0
    while True:
        with transaction.atomic():
            head = TimelineHead.objects.select_for_update().get(pk=agent_id)
            if head.min_seq >= target:
                return TrimResult(agent_id=agent_id, rows=removed_rows, bytes=removed_bytes, min_seq=head.min_seq)
            upto = min(target, head.min_seq + batch_size)
            doomed = TimelineRow.objects.filter(agent_id=agent_id, seq__gte=head.min_seq, seq__lt=upto)
            size = sum(item_bytes(item) for item in doomed.values_list("item", flat=True))
            rows, _ = doomed.delete()
            TimelineHead.objects.filter(pk=agent_id).update(
                min_seq=upto,
                committed_rows=F("committed_rows") - rows,
                committed_bytes=F("committed_bytes") - size,
            )
        removed_rows += rows
        removed_bytes += size


def delete_rows_of_archived_agents(*, archived_before: dt.datetime, batch_size: int = PRUNE_BATCH_ROWS) -> int:
    """Delete the committed rows of every agent archived before ``archived_before``, in batches; how many.

    The archive test is made again in every batch, so an agent unarchived
    meanwhile keeps the rest of its history. The agents themselves are
    deleted next (their counters go with them).

    One agent at a time, each batch its oldest rows in seq order: a range of
    the (agent, seq) index. A batch over every archived agent at once, in no
    order, led PostgreSQL's planner to a sequential scan of the whole table
    for each batch once the table had no index on ``agent`` alone.
    """
    deleted = 0
    archived = AgentSnapshot.objects.filter(archived_at__lt=archived_before).order_by("pk").values_list("pk", flat=True)
    for agent_id in list(archived):
        rows = TimelineRow.objects.filter(agent_id=agent_id, agent__archived_at__lt=archived_before)
        while True:
            with transaction.atomic():
                batch = list(rows.order_by("seq").values_list("pk", flat=True)[:batch_size])
                if not batch:
                    break
                TimelineRow.objects.filter(pk__in=batch).delete()
            deleted += len(batch)
    return deleted
