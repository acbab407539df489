"""OpenAPI for the live stream.

The stream is a plain async view, which drf-spectacular cannot inspect, so
this post-processing hook writes its operation into the schema by hand. Keep
it in step with timeline/live/views.py and docs/timeline.md.
"""

from __future__ import annotations

STREAM_PATH = "/api/v1/agents/{agent_id}/timeline/stream"

STREAM_DESCRIPTION = """\
Server-Sent Events. The server first sends every committed row after the resume point
(read from the database), then live events; each committed seq arrives exactly once, in order,
across any number of reconnects.

Resume point: the `Last-Event-ID` header, else `after_seq`, else the current head (only new events).

Events:
- `committed`: `id:` is the seq; `data` is the row `{seq, committed_at, item_type, item, item_id, turn_id}`.
- `provisional`: no `id`; `data` is `{item, item_id}`. Never stored.
- `agent`: a change of lifecycle, attention or archive (`data` carries the agent's state, incl. `archived_at`).
- `reset`: the epoch changed (or the resume point is beyond the head): re-read the tail; or, with reason
  `gap`, the rows after the resume point are no longer retained: the stream goes on from `min_seq`.
- A `:` keep-alive comment at least every 15 s.

Served only under ASGI; under WSGI it answers 503 `asgi_required`.
"""


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def document_timeline_stream(result, generator, request, public):
    result.setdefault("paths", {})[STREAM_PATH] = {
        "get": {
            "operationId": "timeline_stream",
            "summary": "Stream the agent's timeline (catch-up, then live)",
            "description": STREAM_DESCRIPTION,
            "tags": ["timeline"],
            "security": [{"bearerAuth": []}],
            "parameters": [
                {"name": "agent_id", "in": "path", "required": True, "schema": {"type": "string"}},
                {
                    "name": "after_seq",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
                    "description": "Resume after this seq (ignored when Last-Event-ID is sent).",
                },
                {
                    "name": "epoch",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "The epoch the client's cursor belongs to; a stale one gets `reset`.",
                },
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "The last committed seq the client received.",
                },
            ],
            "responses": {
                "200": {
                    "description": "An endless text/event-stream.",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                "400": _error("`after_seq` or `Last-Event-ID` is not a whole number in range (`invalid`)."),
                "401": _error("The bearer token is missing, malformed, unknown or revoked (`not_authenticated`)."),
                "404": _error("The agent does not exist (`not_found`)."),
                "500": _error("An unexpected failure before the stream started (`server_error`)."),
                "503": _error("The server runs under WSGI, which cannot stream (`asgi_required`)."),
            },
        }
    }
    return result
