"""The one way rows enter an agent's committed timeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from kernel.errors import ArchivedConflict, NotFound, SeqConflict
from snapshots.models import AgentSnapshot
from timeline.items import check_item_size, new_item_problems
from timeline.models import TimelineRow
from timeline.signals import timeline_committed

MAX_ITEMS_PER_APPEND = 500


@dataclass(frozen=True)
class NewTimelineItem:
    item: dict
    item_id: str | None = None


@dataclass(frozen=True)
class CommittedRow:
    seq: int
    committed_at: object
    item_id: str | None


@dataclass(frozen=True)
class AppendResult:
    rows: list[CommittedRow]
    head_seq: int
    epoch: str
    created: int
    #: Rows of this call that had been committed before (idempotent retries).
    replayed: int = field(default=0)


def validate_new_items(items: Sequence[NewTimelineItem]) -> None:
    """Check the whole batch before touching the database, so a bad item stores nothing."""
    if not 1 <= len(items) <= MAX_ITEMS_PER_APPEND:
        raise ValidationError({"items": [f"Send between 1 and {MAX_ITEMS_PER_APPEND} items per call."]}, code="invalid")
    errors: dict[str, list[str]] = {}
    seen_ids: dict[str, int] = {}
    for index, new in enumerate(items):
        for name, problems in new_item_problems(new.item, new.item_id).items():
            errors[f"items[{index}].{name}"] = problems
        if new.item_id is not None and f"items[{index}].item_id" not in errors:
            if new.item_id in seen_ids:
                errors[f"items[{index}].item_id"] = [
                    f"item_id repeats items[{seen_ids[new.item_id]}].item_id in the same call."
                ]
            seen_ids[new.item_id] = index
    if errors:
        raise ValidationError(errors, code="invalid")
    for index, new in enumerate(items):
        check_item_size(new.item, index=index)


def append_timeline_items(
    *, agent_id: str, items: Sequence[NewTimelineItem], expected_head_seq: int | None = None
) -> AppendResult:
    """Commit ``items`` to the agent's timeline as seq head+1, head+2, ... atomically.

    Seq assignment is serialised per agent: the agent row is locked
    (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the IMMEDIATE
    transaction already holds the write lock), the head is read, rows are
    bulk-inserted and the head moves, all in one transaction. The unique
    (agent, seq) constraint is only the backstop.

    An item whose ``item_id`` is already committed is not stored again; its
    original seq is returned, so a client retrying after a timeout never
    creates a duplicate. When every item was already committed the call
    succeeds whatever ``expected_head_seq`` says, for the same reason.
    """
    validate_new_items(items)
    with transaction.atomic():
        # Only the bookkeeping columns: the agent's JSON blobs are not needed here.
        agent = (
            AgentSnapshot.objects.select_for_update()
            .only("agent_id", "head_seq", "timeline_epoch", "archived_at")
            .filter(pk=agent_id)
            .first()
        )
        if agent is None:
            raise NotFound(f"Agent {agent_id} does not exist.")
        if agent.is_archived:
            raise ArchivedConflict(f"Agent {agent.agent_id} is archived; its timeline is closed.")

        wanted_ids = [new.item_id for new in items if new.item_id is not None]
        committed = (
            {
                row.item_id: row
                for row in TimelineRow.objects.filter(agent=agent, item_id__in=wanted_ids).only(
                    "seq", "committed_at", "item_id"
                )
            }
            if wanted_ids
            else {}
        )

        all_replayed = all(new.item_id is not None and new.item_id in committed for new in items)
        if not all_replayed and expected_head_seq is not None and expected_head_seq != agent.head_seq:
            raise SeqConflict(
                f"Expected head_seq {expected_head_seq}, but agent {agent.agent_id} is at {agent.head_seq}.",
                extra={"head_seq": agent.head_seq},
            )

        now = timezone.now()
        # One entry per item, in call order: the stored row for a retry, a new row otherwise.
        rows_in_order: list[TimelineRow] = []
        new_rows: list[TimelineRow] = []
        for new in items:
            if new.item_id is not None and new.item_id in committed:
                rows_in_order.append(committed[new.item_id])
                continue
            row = TimelineRow(
                agent=agent,
                seq=agent.head_seq + len(new_rows) + 1,
                committed_at=now,
                item_type=new.item["type"],
                item=new.item,
                item_id=new.item_id,
            )
            new_rows.append(row)
            rows_in_order.append(row)

        if new_rows:
            TimelineRow.objects.bulk_create(new_rows)
            agent.head_seq += len(new_rows)
            AgentSnapshot.objects.filter(pk=agent.pk).update(head_seq=agent.head_seq)
            head, epoch, agent_pk = agent.head_seq, agent.timeline_epoch, agent.pk
            transaction.on_commit(
                lambda: timeline_committed.send(sender=TimelineRow, agent_id=agent_pk, head_seq=head, epoch=epoch)
            )

    return AppendResult(
        rows=[CommittedRow(seq=r.seq, committed_at=r.committed_at, item_id=r.item_id) for r in rows_in_order],
        head_seq=agent.head_seq,
        epoch=agent.timeline_epoch,
        created=len(new_rows),
        replayed=len(items) - len(new_rows),
    )
