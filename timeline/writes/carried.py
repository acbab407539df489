"""Carrying a whole timeline over as it was: an instance import (``portability``) into an empty database.

The rows go in through ``timeline.services.bulk_append_timeline_rows`` (the append's rules, the
search index, the head locked and moved, subscribers told on commit), each at its own seq, from
the exported ``min_seq`` in the exported epoch; then the head takes the rest of what the export
holds: its ``head_seq`` (a pruned, emptied timeline keeps its range), growth counters and times.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from kernel.errors import Conflict
from timeline.models import TimelineHead, TimelineRow, TimelineRowRevision
from timeline.services import BULK_APPEND_BATCH, BulkAppendResult, CheckedRow, bulk_append_timeline_rows
from timeline.writes.revisions import revision_of

#: A carried revision's own fields besides its content (``revisions.COPIED_FIELDS``).
KEPT = ("revision", "update_seq", "replaced_at")


@dataclass(frozen=True)
class CarriedTimeline:
    """An agent's timeline head as an export holds it."""

    agent_id: str
    epoch: str
    min_seq: int
    head_seq: int
    committed_rows: int
    committed_bytes: int
    last_activity_at: dt.datetime | None
    last_user_message_at: dt.datetime | None
    last_appended_at: dt.datetime | None
    update_seq: int
    backfilling: bool


def carry_over_timeline(
    *,
    head: CarriedTimeline,
    rows: Iterable[CheckedRow],
    batch_size: int = BULK_APPEND_BATCH,
    on_batch: Callable[[int], None] | None = None,
) -> BulkAppendResult:
    """Put ``rows`` (ascending seqs, each with its own ``seq``, within ``min_seq..head_seq``) into the
    agent's timeline, which must never have held a row, and give its head the carried state.
    Inside the caller's transaction (a savepoint of it); archived agents take their history too."""
    if head.min_seq < 1 or head.min_seq > head.head_seq + 1:
        raise Conflict(f"Timeline of {head.agent_id}: min_seq {head.min_seq} is outside 1..head_seq + 1.")
    with transaction.atomic():
        appended = bulk_append_timeline_rows(
            agent_id=head.agent_id,
            rows=rows,
            expected_head_seq=0,
            allow_archived=True,
            batch_size=batch_size,
            on_batch=on_batch,
            start_seq=head.min_seq,
            epoch=head.epoch,
            keep_seqs=True,
        )
        if appended.head_seq > head.head_seq:
            raise Conflict(
                f"Timeline of {head.agent_id}: a row has seq {appended.head_seq}, above its head_seq {head.head_seq}."
            )
        TimelineHead.objects.filter(pk=head.agent_id).update(
            head_seq=head.head_seq,
            committed_rows=head.committed_rows,
            committed_bytes=head.committed_bytes,
            last_activity_at=head.last_activity_at,
            last_user_message_at=head.last_user_message_at,
            last_appended_at=head.last_appended_at,
            update_seq=head.update_seq,
            backfilling=head.backfilling,
        )
    return appended


@dataclass(frozen=True)
class CarriedRevision:
    """An earlier version of the row at ``seq``, as an export holds it."""

    seq: int
    revision: int
    update_seq: int | None
    replaced_at: dt.datetime
    committed_at: dt.datetime
    item_type: str
    item: dict
    turn_id: str | None
    provider_message_id: str | None
    provider_timeline_item_id: str | None
    has_revert_token: bool
    revert_token: Any
    extra: dict | None


def carry_over_revisions(
    *, agent_id: str, versions: Iterable[tuple[int, int, int | None]], revisions: list[CarriedRevision]
) -> int:
    """Give the carried rows of ``agent_id`` their versions (``(seq, revision, update_seq)`` of each
    row an update changed) and the earlier versions an update keeps; how many of those. After
    ``carry_over_timeline``, in the caller's transaction. A version of a seq the agent has no row
    at is a ``Conflict``."""
    with transaction.atomic():
        for seq, revision, update_seq in versions:
            TimelineRow.objects.filter(agent_id=agent_id, seq=seq).update(revision=revision, update_seq=update_seq)
        rows = dict(
            TimelineRow.objects.filter(agent_id=agent_id, seq__in={r.seq for r in revisions}).values_list("seq", "pk")
        )
        missing = sorted({r.seq for r in revisions} - rows.keys())
        if missing:
            raise Conflict(f"Timeline of {agent_id}: an earlier version of seq {missing[0]}, which holds no row.")
        TimelineRowRevision.objects.bulk_create(
            revision_of(r, row_id=rows[r.seq], agent_id=agent_id, **{name: getattr(r, name) for name in KEPT})
            for r in revisions
        )
    return len(revisions)
