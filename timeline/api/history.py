"""Paseo's store writes over HTTP (timeline/writes/history.py), on the API's lean path (kernel/api/plain.py):

- ``POST …/timeline/rows``: ``bulkInsert``;
- ``PUT …/timeline`` and ``DELETE …/timeline``: ``replaceCommitted`` and ``deleteAgent`` (their
  operations join the timeline's own view, timeline/api/views.py);
- ``POST …/timeline/backfill`` and ``…/timeline/backfill/complete``: ``beginBackfill``, ``completeBackfill``.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel.api.plain import Answer, Operation, json_view
from timeline.api.shapes import Window
from timeline.items import encoded_or_none
from timeline.rows import ReadRow, Row, read_row
from timeline.selectors import RetainedRange
from timeline.writes.history import (
    MAX_ROW_SEQ,
    HistoryResult,
    begin_backfill,
    complete_backfill,
    delete_history,
    insert_rows,
    replace_rows,
)
from tokens.access import authorize

# --- shapes -------------------------------------------------------------------


class WrittenRow(Row, forbid_unknown_fields=True, kw_only=True):
    """One row at its own seq: Paseo's ``AgentTimelineRow`` in the API's spelling."""

    seq: Annotated[int, msgspec.Meta(ge=1, le=MAX_ROW_SEQ, description="The row's own seq (up to 2^53 - 1).")]


class RowsWrite(msgspec.Struct, forbid_unknown_fields=True):
    rows: Annotated[
        list[WrittenRow],
        msgspec.Meta(
            min_length=1, description="Any number of rows, all or nothing: the body's size limit bounds them."
        ),
    ]


class HistoryReplacement(msgspec.Struct, forbid_unknown_fields=True):
    rows: Annotated[
        list[WrittenRow],
        msgspec.Meta(
            description="The whole new history, any number of rows (the body's size limit bounds them); [] for none."
        ),
    ]


class TimelineHistory(msgspec.Struct):
    """The timeline after a history write, and what the write changed."""

    agent_id: str
    epoch: str
    head_seq: int
    window: Window
    backfilling: bool
    inserted: Annotated[int, msgspec.Meta(description="Rows the call inserted (0 for a repeat).")]
    deleted: Annotated[int, msgspec.Meta(description="Rows the call deleted.")]
    changed: Annotated[bool, msgspec.Meta(description="False when the call was a repeat that changed nothing.")]


def store_rows(sent: list[WrittenRow]) -> list[ReadRow]:
    # An item without a string type is refused by the write's checks (timeline.writes.history.check_store_rows).
    return [read_row(row, item_type=row.item.get("type"), item_json=encoded_or_none(row.item)) for row in sent]


def history_document(result: HistoryResult, *, inserted: int = 0, deleted: int = 0) -> TimelineHistory:
    retained = RetainedRange(min_seq=result.min_seq, head_seq=result.head_seq)
    return TimelineHistory(
        agent_id=result.agent_id,
        epoch=result.epoch,
        head_seq=result.head_seq,
        window=Window(**retained.window()),
        backfilling=result.backfilling,
        inserted=inserted,
        deleted=deleted,
        changed=result.changed,
    )


# --- handlers -----------------------------------------------------------------


def insert(*, agent_id: str, body: RowsWrite) -> Answer:
    result = insert_rows(agent_id=agent_id, rows=store_rows(body.rows))
    return Answer(history_document(result, inserted=result.rows), status=201 if result.changed else 200)


def replace(*, agent_id: str, body: HistoryReplacement) -> Answer:
    result = replace_rows(agent_id=agent_id, rows=store_rows(body.rows))
    return Answer(history_document(result, inserted=result.rows))


def delete(*, agent_id: str) -> Answer:
    result = delete_history(agent_id=agent_id)
    return Answer(history_document(result, deleted=result.rows))


def begin(*, agent_id: str) -> Answer:
    result = begin_backfill(agent_id=agent_id)
    return Answer(history_document(result, deleted=result.rows))


def complete(*, agent_id: str) -> Answer:
    return Answer(history_document(complete_backfill(agent_id=agent_id)))


# --- operations ---------------------------------------------------------------

_TAGS = ("timeline",)

REPLACE = Operation(
    "PUT",
    replace,
    operation_id="timeline_replace",
    summary="Replace the agent's whole committed history (Paseo's replaceCommitted)",
    description=(
        "The rows become exactly these, at their own seqs, in a new epoch (a UUID): every old cursor gets "
        "`reset` with `stale_cursor`, and a live stream a `reset` event. All or nothing: a refused row "
        "keeps the old history and its epoch. The same rows again change nothing (`changed: false`, "
        "the epoch stays). 409 `archived` for an archived agent."
    ),
    body=HistoryReplacement,
    responses={200: TimelineHistory},
    tags=_TAGS,
)

DELETE = Operation(
    "DELETE",
    delete,
    operation_id="timeline_delete",
    summary="Drop the agent's committed history (Paseo's deleteAgent, for the timeline)",
    description=(
        "Every row goes and a new epoch starts, so the next row is seq 1 and old cursors are stale; the agent "
        "itself stays. A timeline that has used no seq in its epoch is left as it is (`changed: false`), so "
        "a repeat changes nothing. 409 `archived` for an archived agent."
    ),
    responses={200: TimelineHistory},
    tags=_TAGS,
)

timeline_rows = json_view(
    Operation(
        "POST",
        insert,
        operation_id="timeline_insert_rows",
        summary="Insert rows at their own seqs (Paseo's bulkInsert)",
        description=(
            "Each row goes in at the seq it carries, above the head (holes between are kept). A row already "
            "committed at its seq with the same content (item, committed_at and every row key) is a no-op: "
            "201 when anything was inserted, 200 when nothing was. Any other row at a seq at or below the "
            "head is 409 `seq_conflict` (with `seq` and `head_seq`), and nothing of the call is stored. "
            "409 `archived` for an archived agent."
        ),
        body=RowsWrite,
        responses={201: TimelineHistory, 200: TimelineHistory},
        tags=_TAGS,
    ),
    authorize=authorize,
)

backfill = json_view(
    Operation(
        "POST",
        begin,
        operation_id="timeline_backfill_begin",
        summary="Begin a backfill (Paseo's beginBackfill)",
        description=(
            "Drops every row and keeps the epoch: the provider's replay then inserts its rows from seq 1 "
            "(POST .../timeline/rows). Until POST .../timeline/backfill/complete, pages say "
            "`backfilling: true`. Begun again with no row inserted since, it changes nothing."
        ),
        responses={200: TimelineHistory},
        tags=_TAGS,
    ),
    authorize=authorize,
)

backfill_complete = json_view(
    Operation(
        "POST",
        complete,
        operation_id="timeline_backfill_complete",
        summary="Complete a backfill (Paseo's completeBackfill)",
        description="The rows are the whole conversation again: pages say `backfilling: false`. A repeat changes nothing.",
        responses={200: TimelineHistory},
        tags=_TAGS,
    ),
    authorize=authorize,
)
