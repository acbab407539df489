"""The timeline's read and append: plain views on the API's one lean path (kernel/api/plain.py)."""

from __future__ import annotations

import msgspec

from kernel.api.plain import Answer, Operation, json_view
from timeline.api import history as history_views
from timeline.api.shapes import (
    ROW_OR_ENTRY,
    AppendRequest,
    AppendResponse,
    CanonicalRow,
    CommittedRowRef,
    ProjectedEntry,
    ReadQuery,
    TimelinePage,
    Window,
    timestamp_renderer,
)
from timeline.rows import row_keys
from timeline.selectors import TimelinePage as Page
from timeline.selectors import read_timeline
from timeline.services import AppendResult, NewTimelineItem, append_timeline_items
from tokens.access import authorize


def read(*, agent_id: str, query: ReadQuery) -> Answer:
    page = read_timeline(
        agent_id=agent_id,
        direction=query.direction,
        seq=query.seq,
        limit=query.limit,
        epoch=query.epoch,
        projection=query.projection,
        items_as_json=True,
    )
    # The direction asked for, as Paseo's stores answer it, also when a reset read the tail.
    return Answer(page_document(page, projected=query.projection == "projected", direction=query.direction))


def append(*, agent_id: str, body: AppendRequest) -> Answer:
    items = [NewTimelineItem(item=entry.item, item_id=entry.item_id, **row_keys(entry)) for entry in body.items]
    result = append_timeline_items(agent_id=agent_id, items=items, expected_head_seq=body.expected_head_seq)
    return Answer(append_document(result), status=201 if result.created else 200)


def page_document(page: Page, *, projected: bool, direction: str | None = None) -> TimelinePage:
    render_timestamp = timestamp_renderer()
    if projected:
        # An entry's keys are ProjectedEntry's (timeline.reads.projection).
        rows = [
            ProjectedEntry(**{**entry, "committed_at": render_timestamp(entry["committed_at"])}) for entry in page.rows
        ]
    else:
        raw = msgspec.Raw if page.items_as_json else _same
        rows = [
            CanonicalRow(
                seq=row["seq"],
                committed_at=render_timestamp(row["committed_at"]),
                item_type=row["item_type"],
                item=raw(row["item"]),
                item_id=row["item_id"],
                turn_id=row["turn_id"],
                provider_message_id=row["provider_message_id"],
                provider_timeline_item_id=row["provider_timeline_item_id"],
                revert_token=msgspec.UNSET if row["revert_token"] is None else raw(row["revert_token"]),
                extra=raw(row["extra"]),
                revision=row["revision"],
            )
            for row in page.rows
        ]
    retained = page.retained
    return TimelinePage(
        agent_id=page.agent_id,
        epoch=page.epoch,
        direction=direction or page.direction,
        rows=rows,
        window=Window(**retained.window()),
        has_older=page.has_older,
        has_newer=page.has_newer,
        reset=page.reset,
        stale_cursor=page.stale_cursor,
        gap=page.gap,
        holes=page.holes,
        backfilling=page.backfilling,
        start_seq=page.start_seq,
        end_seq=page.end_seq,
    )


def _same(value):
    return value


def append_document(result: AppendResult) -> AppendResponse:
    render_timestamp = timestamp_renderer()
    return AppendResponse(
        rows=[
            CommittedRowRef(
                seq=row.seq,
                committed_at=render_timestamp(row.committed_at),
                item_id=None if row.item_id is None else str(row.item_id),
            )
            for row in result.rows
        ],
        head_seq=result.head_seq,
        epoch=str(result.epoch),
    )


agent_timeline = json_view(
    Operation(
        "GET",
        read,
        operation_id="timeline_read",
        summary="Read a window of the agent's committed timeline",
        query=ReadQuery,
        responses={200: TimelinePage},
        tags=("timeline",),
        one_of=(ROW_OR_ENTRY,),
    ),
    Operation(
        "POST",
        append,
        operation_id="timeline_append",
        summary="Append items to the agent's committed timeline",
        description=(
            "Items commit atomically with contiguous seqs. 201 when anything new was stored; 200 when every "
            "item's item_id was already committed with the same item (an idempotent retry). 409 item_conflict "
            "(with the stored `item_id` and `seq`) when an item_id is committed with a different item; "
            "409 seq_conflict when expected_head_seq is stale; 409 archived for an archived agent."
        ),
        body=AppendRequest,
        responses={201: AppendResponse, 200: AppendResponse},
        tags=("timeline",),
    ),
    # Paseo's replaceCommitted and deleteAgent (timeline/api/history.py).
    history_views.REPLACE,
    history_views.DELETE,
    authorize=authorize,
)
