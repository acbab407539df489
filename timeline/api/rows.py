"""``PUT /api/v1/agents/{agent_id}/timeline/rows/{seq}``: a committed row updated in place
(Paseo's ``updateCommittedRow``), on the API's lean path (kernel/api/plain.py)."""

from __future__ import annotations

import datetime as dt

import msgspec
from django.core.exceptions import ValidationError

from kernel.api.plain import Answer, Operation, json_view
from timeline.api.shapes import CanonicalRow, RowUpdateRequest, timestamp_renderer
from timeline.writes.revisions import NO_TOKEN, RowContent, update_row
from tokens.access import authorize


class RowUpdated(msgspec.Struct):
    """The row as it now is, whether the call changed it, and the agent's update count."""

    row: CanonicalRow
    changed: bool
    update_seq: int
    epoch: str


def _committed_at(raw: str | None) -> dt.datetime | None:
    if raw is None:
        return None
    try:
        # COMMIT_TIME_PATTERN lets only times with an offset through, RFC 3339's lower-case t and z too.
        return dt.datetime.fromisoformat(raw.upper())
    except ValueError:
        raise ValidationError({"committed_at": ["An ISO 8601 time with its offset."]}, code="invalid") from None


def update(*, agent_id: str, seq: int, body: RowUpdateRequest) -> Answer:
    content = RowContent(
        item=body.item,
        committed_at=_committed_at(body.committed_at),
        turn_id=body.turn_id,
        provider_message_id=body.provider_message_id,
        provider_timeline_item_id=body.provider_timeline_item_id,
        revert_token=NO_TOKEN if body.revert_token is msgspec.UNSET else body.revert_token,
    )
    result = update_row(agent_id=agent_id, seq=seq, content=content)
    row = result.row
    rendered = CanonicalRow(
        seq=row.seq,
        committed_at=timestamp_renderer()(row.committed_at),
        item_type=row.item_type,
        item=msgspec.Raw(msgspec.json.encode(row.item)),
        item_id=row.item_id,
        turn_id=row.turn_id,
        provider_message_id=row.provider_message_id,
        provider_timeline_item_id=row.provider_timeline_item_id,
        revert_token=msgspec.Raw(msgspec.json.encode(row.revert_token)) if row.has_revert_token else None,
        extra=msgspec.Raw(msgspec.json.encode(row.extra or {})),
        revision=row.current_revision,
    )
    document = RowUpdated(row=rendered, changed=result.changed, update_seq=result.update_seq, epoch=result.epoch)
    return Answer(document)


timeline_row = json_view(
    Operation(
        "PUT",
        update,
        operation_id="timeline_row_update",
        summary="Update a committed row in place (Paseo's updateCommittedRow)",
        description=(
            "The row keeps its seq and item_id; its item, commit time and Paseo keys become the body's. What it "
            "held before is kept as an earlier revision, and its `revision` goes up by one. The same content again "
            "changes nothing (`changed` false). Live streams opened with `updates=1` get an `updated` event. "
            "404 row_not_found when the agent holds no row at that seq; 409 archived for an archived agent."
        ),
        body=RowUpdateRequest,
        responses={200: RowUpdated},
        tags=("timeline",),
    ),
    authorize=authorize,
)
