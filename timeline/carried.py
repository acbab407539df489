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

from django.db import transaction

from kernel.errors import Conflict
from timeline.models import TimelineHead
from timeline.services import BULK_APPEND_BATCH, BulkAppendResult, CheckedRow, bulk_append_timeline_rows


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
