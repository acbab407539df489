"""The live stream's contract, declared once beside its view (timeline/live/views.py): what the
view reads its query with (``StreamQuery``) and its ``Last-Event-ID`` header's form, and from
those and the events it sends, its OpenAPI operation (``STREAM_OPERATION``), which the view
carries (``kernel.api.plain.documents``) and kernel/api/plain_schema.py places at its path.

The stream is a plain async view, which drf-spectacular cannot inspect; its parameters come
from what the view validates with, the rest is written here, in step with timeline/live/sse.py
and docs/timeline.md.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from kernel.api.plain import DescribedOperation
from snapshots.models import AttentionReason, Lifecycle
from timeline.api.schema import schema_ref
from timeline.api.shapes import MAX_SEQ
from timeline.live.stream import RESET_REASONS


class StreamQuery(msgspec.Struct, frozen=True):
    """The stream's query, as ``kernel.api.plain.read_query`` reads it (an empty value is no value).
    Other parameters are left to others: ``ticket`` is a credential (tokens/access.py)."""

    after_seq: (
        Annotated[
            int,
            msgspec.Meta(ge=0, le=MAX_SEQ, description="Resume after this seq (ignored when Last-Event-ID is sent)."),
        ]
        | None
    ) = None
    updates: (
        Annotated[
            Literal["0", "1"],
            msgspec.Meta(
                description="1: also send `updated` events for rows updated in place, with `seq:update_seq` ids."
            ),
        ]
        | None
    ) = None
    epoch: (
        Annotated[str, msgspec.Meta(description="The epoch the client's cursor belongs to; a stale one gets `reset`.")]
        | None
    ) = None


LAST_EVENT_ID = "Last-Event-ID"
#: What a Last-Event-ID must look like: a seq, or ``seq:update_seq`` as ``updates=1`` streams send them.
LAST_EVENT_ID_PATTERN = "^[0-9]+(:[0-9]+)?$"
LAST_EVENT_ID_PARAMETER = {
    "name": LAST_EVENT_ID,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": LAST_EVENT_ID_PATTERN},
    "description": "The `id` of the last event the client received (a seq, or `seq:update_seq`). "
    "One beyond the head gets `reset`.",
}


STREAM_DESCRIPTION = """\
Server-Sent Events. The server first sends every committed row after the resume point
(read from the database), then live events; each committed seq arrives exactly once, in order,
across any number of reconnects.

Resume point: the `Last-Event-ID` header, else `after_seq`, else the current head (only new events).

Credentials: `Authorization: Bearer <token>`, or (for EventSource, which cannot send a header)
`?ticket=` from `POST .../timeline/stream-tickets`, which opens one stream once. Reconnect with a
fresh ticket and `after_seq` (docs/api.md, "Stream tickets").

Events:
- `committed`: `id:` is the seq; `data` is the row `{seq, committed_at, item_type, item, item_id, turn_id, provider_message_id, provider_timeline_item_id, extra, revert_token}` (`revert_token` left out when the row has none).
- `provisional`: no `id`; `data` is `{item, item_id}`. Never stored.
- `updated` (only with `?updates=1`): a committed row updated in place; `data` is the row as `committed`'s.
  With `updates=1` every `id:` is `seq:update_seq`, and a `Last-Event-ID` in that form replays the
  updates missed, each once, after the rows (docs/timeline.md, "Updates").
- `agent`: a change of lifecycle, attention or archive (`data` carries the agent's state, incl. `archived_at`).
- `reset`: the epoch changed (or the resume point is beyond the head): re-read the tail; or, with reason
  `gap`, the rows after the resume point are no longer retained: the stream goes on from `min_seq`.
- A `:` keep-alive comment at least every 15 s.

The stream ends, with no further event, when its server drains (reconnect) or when its token is
revoked (within about 1 to 2 s, on every instance; the reconnect gets 401).

Served only under ASGI; under WSGI it answers 503 `asgi_required`.
"""


_SEQ_ID = {
    "type": "string",
    "pattern": LAST_EVENT_ID_PATTERN,
    "description": "Where a reconnect resumes: a seq, or `seq:update_seq` on an `updates=1` stream.",
}
_TIMESTAMP = {"type": "string", "format": "date-time"}
_NULLABLE_TIMESTAMP = {"type": ["string", "null"], "format": "date-time"}


def _event(name: str, description: str, data: dict, *, id_: str) -> dict:
    """One SSE event as Schemathesis and OpenAPI 3.1 read it: ``{event, data, id?, retry?}``, data a JSON string."""
    properties = {
        "event": {"type": "string", "const": name},
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data},
        "id": _SEQ_ID,
        "retry": {"type": "integer", "description": "Only on a connection's first event: the reconnect delay (ms)."},
    }
    required = ["event", "data"] + (["id"] if id_ == "always" else [])
    return {"type": "object", "description": description, "properties": properties, "required": required}


def _agent_event_data() -> dict:
    """The ``agent`` event's data: the agent's state, or the notice that it was deleted."""
    agent_state = {
        "type": "object",
        "properties": {
            "agent_id": {"type": "string"},
            "reason": {
                "type": "string",
                "enum": ["snapshot", "created", "updated", "archived", "unarchived", "changed"],
            },
            "lifecycle": {"type": "string", "enum": list(Lifecycle.values)},
            "requires_attention": {"type": "boolean"},
            "attention_reason": {"type": ["string", "null"], "enum": [*AttentionReason.values, None]},
            "attention_at": _NULLABLE_TIMESTAMP,
            "archived_at": _NULLABLE_TIMESTAMP,
            "updated_at": _TIMESTAMP,
            "version": {"type": "integer"},
            "head_seq": {"type": "integer", "minimum": 0},
            "epoch": {"type": "string"},
        },
    }
    agent_state["required"] = list(agent_state["properties"])
    agent_deleted = {
        "type": "object",
        "properties": {
            "agent_id": {"type": "string"},
            "reason": {"type": "string", "const": "deleted"},
            "deleted": {"type": "boolean", "const": True},
        },
        "required": ["agent_id", "reason", "deleted"],
    }
    return {"oneOf": [agent_state, agent_deleted]}


def stream_event_components() -> dict[str, dict]:
    """The components of the 200's schema: one per event, and ``TimelineStreamEvent``, any of them."""
    events = {
        "CommittedEvent": _event(
            "committed",
            "A committed row, exactly as the REST read returns it. `id` is its seq.",
            schema_ref("CanonicalRow"),
            id_="always",
        ),
        "ProvisionalEvent": _event(
            "provisional",
            "A streaming update, never stored. Sends no `id:` line (an SSE parser repeats the last id it saw).",
            {
                "type": "object",
                "properties": {"item": schema_ref("TimelineItem"), "item_id": {"type": ["string", "null"]}},
                "required": ["item", "item_id"],
            },
            id_="never",
        ),
        "UpdatedEvent": _event(
            "updated",
            "A committed row updated in place (only on a stream opened with `updates=1`). `id` is "
            "`seq:update_seq`: the last seq sent and this update's number.",
            schema_ref("CanonicalRow"),
            id_="always",
        ),
        "AgentEvent": _event(
            "agent",
            "The agent's state. The opening event (`reason: snapshot`) has `id`: the cursor the stream starts "
            "from (0 for an empty history); later ones send no `id:` line. A deleted agent's event is "
            "`{agent_id, reason: deleted, deleted: true}`, and the stream ends.",
            _agent_event_data(),
            id_="sometimes",
        ),
        "ResetEvent": _event(
            "reset",
            "The cursor cannot be resumed: `epoch` (another epoch) or `cursor_ahead` (beyond the head): drop "
            "your rows, re-read the tail; the stream goes on after `head_seq`, which is also its `id`. `gap` "
            "(the rows right after the cursor are no longer retained): the stream goes on from `min_seq`, and "
            "its `id` is `min_seq - 1`.",
            {
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "enum": list(RESET_REASONS)},
                    "epoch": {"type": "string"},
                    "head_seq": {"type": "integer", "minimum": 0},
                    "min_seq": {"type": "integer", "minimum": 1},
                },
                "required": ["reason", "epoch", "head_seq", "min_seq"],
            },
            id_="always",
        ),
    }
    events["TimelineStreamEvent"] = {
        "description": "One event of the timeline stream, named by `event`.",
        "oneOf": [schema_ref(name) for name in events],
    }
    return events


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema_ref("Error")}},
    }


#: The stream's second credential, for EventSource: a ticket from POST .../stream-tickets (tokens/access.py).
STREAM_TICKET_SCHEME = {
    "type": "apiKey",
    "in": "query",
    "name": "ticket",
    "description": "A stream ticket (`POST /api/v1/agents/{agent_id}/timeline/stream-tickets`): opens this "
    "agent's stream once, within 60 s. For EventSource, which cannot send `Authorization`; never both at once.",
}


STREAM_OPERATION = DescribedOperation(
    "GET",
    operation_id="timeline_stream",
    summary="Stream the agent's timeline (catch-up, then live)",
    description=STREAM_DESCRIPTION,
    tags=("timeline",),
    query=StreamQuery,
    headers=(LAST_EVENT_ID_PARAMETER,),
    security=({"bearerAuth": []}, {"streamTicket": []}),
    responses={
        "200": {
            "description": "An endless text/event-stream. The schema describes one event "
            "(OpenAPI before 3.2 has no `itemSchema`): `event` names it, `data` is JSON "
            "(`contentSchema`), and `id` is present exactly on the events that move the resume cursor.",
            "content": {"text/event-stream": {"schema": schema_ref("TimelineStreamEvent")}},
        },
        "400": _error(
            "`after_seq` or `Last-Event-ID` is not a whole number in range, `updates` is not 0 or 1, a query "
            "parameter is given twice or holds a NUL, or a ticket came with an `Authorization` header (`invalid`)."
        ),
        "401": _error(
            "The bearer token is missing, malformed, unknown or revoked (`not_authenticated`); or the "
            "ticket is unknown, expired, already used, or its token was revoked (`stream_ticket_invalid`)."
        ),
        "403": _error("The ticket opens another agent's stream (`stream_ticket_other_agent`)."),
        "404": _error("The agent does not exist (`not_found`)."),
        "429": _error(
            "The token is over its request rate (`throttled`), or holds as many open streams on "
            "this server as it may (`too_many_streams`); retry after `Retry-After` seconds."
        ),
        "500": _error("An unexpected failure before the stream started (`server_error`)."),
        "503": _error(
            "The server holds as many open streams as it may (`stream_capacity`, retry after "
            "`Retry-After`), is shutting down (`shutting_down`), or runs under WSGI, which cannot "
            "stream (`asgi_required`)."
        ),
    },
    schemas=stream_event_components(),
    security_schemes={"streamTicket": STREAM_TICKET_SCHEME},
)
