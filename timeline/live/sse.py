"""Server-Sent Events framing for the live stream: committed rows, agent states, keep-alives.

Its own module because both the database reads (which pre-encode rows once
for every subscriber sharing a read) and the stream need it.
"""

from __future__ import annotations

import datetime as dt
import json

from django.core.serializers.json import DjangoJSONEncoder

from timeline.api.shapes import render_timestamp
from timeline.models import ROW_FIELDS

KEEPALIVE = b": keep-alive\n\n"
#: The agent snapshot fields an ``agent`` event carries, in its order (then its timeline head's).
AGENT_STATE_FIELDS = (
    "agent_id",
    "lifecycle",
    "requires_attention",
    "attention_reason",
    "attention_at",
    "archived_at",
    "updated_at",
    "version",
)


class _Encoder(DjangoJSONEncoder):
    def default(self, o):
        if isinstance(o, dt.datetime):
            return render_timestamp(o)
        return super().default(o)


def _json(data) -> str:
    return json.dumps(data, cls=_Encoder, separators=(",", ":"), ensure_ascii=False)


def sse_frame(event: str, data, *, event_id: int | str | None = None) -> bytes:
    """One SSE event. JSON never contains a raw newline, so ``data`` is one line."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {_json(data)}\n\n".encode()


def encode_committed_row(row) -> bytes:
    """A row's ``committed`` event, its id the seq: the row as the REST read renders it
    (``revert_token`` left out when the row has none: ``has_revert_token``, from
    ``timeline.selectors.rows_after``)."""
    data = {key: getattr(row, key) for key in ROW_FIELDS if key != "revert_token"}
    data["extra"] = row.extra or {}
    data["revision"] = row.revision or 1
    if getattr(row, "has_revert_token", row.revert_token is not None):
        data["revert_token"] = row.revert_token
    return sse_frame("committed", data, event_id=row.seq)


def agent_event(state: dict, reason: str, *, event_id: int | None = None) -> bytes:
    """The ``agent`` event of ``state`` (``timeline.live.reads.read_agent_state``'s), its times rendered by the encoder."""
    data = {"agent_id": state["agent_id"], "reason": reason, **{key: state[key] for key in AGENT_STATE_FIELDS[1:]}}
    data.update(head_seq=state["head_seq"], epoch=state["timeline_epoch"])
    return sse_frame("agent", data, event_id=event_id)
