"""The live side of the timeline API: the SSE stream and provisional updates, and the
same stream for the admin's timeline page (``admin_timeline_stream``, session-authenticated).

The stream is a plain async Django view, not a DRF view: DRF's APIView is
synchronous and would tie a worker thread to every open stream. It applies the
same token checks (tokens/access.py) and answers errors with the same envelope
(kernel/api/errors.py). Its query and ``Last-Event-ID`` are read with the declaration its
OpenAPI is made from (timeline/live/openapi.py). Provisional updates are a plain view on the
API's lean path (kernel/api/plain.py).
"""

from __future__ import annotations

import re

from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from kernel import draining
from kernel.api.errors import MethodNotAllowed, error_json_response
from kernel.api.plain import Answer, Operation, documents, json_view, read_query
from kernel.errors import NotFound
from kernel.event_stream import EventStreamResponse
from timeline.api.shapes import MAX_SEQ, ProvisionalAccepted, ProvisionalItem
from timeline.errors import StreamCapacity
from timeline.live.hub import get_hub
from timeline.live.openapi import LAST_EVENT_ID, LAST_EVENT_ID_PATTERN, STREAM_OPERATION, StreamQuery
from timeline.live.provisional import publish_provisional
from timeline.live.slots import REQUEST_ATTRIBUTE, Slot, stream_slots
from timeline.live.stream import TimelineStream
from timeline.selectors import get_agent_for_timeline
from tokens.access import StreamCaller, authorize, check_stream_caller
from tokens.services import spend_stream_ticket

LAST_EVENT_ID_RE = re.compile(LAST_EVENT_ID_PATTERN)


def _error_response(exc: Exception) -> HttpResponse:
    return error_json_response(exc, where="timeline_stream")


def _non_negative_int(raw: str, field: str) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValidationError({field: ["Must be a whole number."]}, code="invalid") from None
    if not 0 <= value <= MAX_SEQ:
        raise ValidationError({field: [f"Must be between 0 and {MAX_SEQ}."]}, code="invalid")
    return value


def _last_event_id(raw: str) -> tuple[int, int | None]:
    """An id this stream sent: a seq (ASCII digits), or ``seq:update_seq`` (LAST_EVENT_ID_PATTERN).
    One beyond any seq is a cursor ahead of the head, answered with ``reset`` like any other."""
    if LAST_EVENT_ID_RE.fullmatch(raw) is None:
        raise ValidationError({LAST_EVENT_ID: ["Must be a seq, or seq:update_seq: ASCII digits only."]}, code="invalid")
    seq, _, update = raw.partition(":")
    return _bounded(seq), _bounded(update) if update else None


def _bounded(raw: str) -> int:
    digits = raw.lstrip("0")
    # Longer than any seq: Python would refuse to convert thousands of digits, and the answer is the same.
    if len(digits) > len(str(MAX_SEQ)):
        return MAX_SEQ
    return min(int(digits or "0"), MAX_SEQ)


def _authorize_stream(request: HttpRequest, agent_id: str) -> StreamCaller:
    """The stream's caller (a stream ticket, checked but not spent yet, else the API's token checks;
    opening a stream counts as a request for the throttle), then that the agent exists. Blocking (ORM)."""
    caller = check_stream_caller(request, agent_id)
    get_agent_for_timeline(agent_id=agent_id)
    return caller


def _take_slot(request: HttpRequest, owner) -> Slot:
    """One of this worker's stream slots (timeline/live/slots.py): 503 or 429 when none is left;
    the handler gives it back at the request's end, whatever happens."""
    slot = stream_slots.take(owner)
    setattr(request, REQUEST_ATTRIBUTE, slot)
    return slot


def _open_stream(
    request: HttpRequest, hub, agent_id: str, *, slot: Slot, after_seq, epoch, updates=False, after_update=None
) -> EventStreamResponse:
    """The stream, in the slot taken for it."""
    stream = TimelineStream(
        hub,
        agent_id,
        after_seq=after_seq,
        epoch=epoch,
        on_close=slot.release,
        updates=updates,
        after_update=after_update,
        token_id=slot.owner,
    )
    response = EventStreamResponse(stream.events())
    response["Cache-Control"] = "no-cache"
    # Keeps nginx and similar proxies from buffering the stream.
    response["X-Accel-Buffering"] = "no"
    return response


@documents(STREAM_OPERATION)
@csrf_exempt  # bearer tokens, no cookies: a wrong method gets the API's 405, not a CSRF page
async def timeline_stream(request: HttpRequest, agent_id: str):
    """GET /api/v1/agents/{agent_id}/timeline/stream: Server-Sent Events (see docs/timeline.md)."""
    if not isinstance(request, ASGIRequest):
        # Under WSGI (e.g. runserver) Django would buffer this endless response
        # whole and hold a thread forever; say so instead.
        return JsonResponse(
            {
                "error": {
                    "code": "asgi_required",
                    "message": "The live stream is served only under ASGI "
                    "(gunicorn -k uvicorn_worker.UvicornWorker, or uvicorn).",
                }
            },
            status=503,
        )
    if request.method != "GET":
        return _error_response(MethodNotAllowed(request.method, ["GET"]))
    if draining.is_draining():
        # A stream here would end within moments: a load balancer retries this on another instance.
        response = JsonResponse(
            {"error": {"code": "shutting_down", "message": "This server is shutting down; reconnect."}}, status=503
        )
        response["Retry-After"] = "1"
        return response
    try:
        hub = get_hub()
        caller = await hub.db.run(_authorize_stream, request, agent_id)
        # after_seq is checked even when Last-Event-ID wins: a bad parameter is never silently ignored.
        query = read_query(request, StreamQuery)
        after_seq, after_update = query.after_seq, None
        last_event_id = request.headers.get(LAST_EVENT_ID)
        if last_event_id is not None:
            after_seq, after_update = _last_event_id(last_event_id)
        # The ticket is spent last, once the rate is checked and the slot taken: a refusal leaves it usable.
        slot = _take_slot(request, caller.token.pk)
        if caller.ticket is not None:
            try:
                await hub.db.run(spend_stream_ticket, ticket=caller.ticket)
            except BaseException:
                slot.release()
                raise
        return _open_stream(
            request,
            hub,
            agent_id,
            slot=slot,
            after_seq=after_seq,
            epoch=query.epoch,
            updates=query.updates == "1",
            after_update=after_update,
        )
    except Exception as exc:  # noqa: BLE001 - the handler maps everything, unknown errors to a logged 500
        return _error_response(exc)


def _provisional(*, agent_id: str, body: ProvisionalItem) -> Answer:
    message = publish_provisional(agent_id=agent_id, item=body.item, item_id=body.item_id)
    return Answer(ProvisionalAccepted(agent_id=message.agent_id, item_id=message.item_id), status=202)


provisional = json_view(
    Operation(
        "POST",
        _provisional,
        operation_id="timeline_provisional",
        summary="Send a provisional (streaming) update to the agent's live subscribers",
        description=(
            "Validated like a committed item but never stored and never given a seq: only clients "
            "subscribed to the agent's stream at that moment receive it, as a `provisional` event."
        ),
        body=ProvisionalItem,
        responses={202: ProvisionalAccepted},
        tags=("timeline",),
    ),
    authorize=authorize,
)


# --- The admin's timeline page: the same stream for a logged-in operator -------


def _authorize_operator(user, agent_id: str) -> int:
    """403 for anyone but active staff who may view agents, 404 for an unknown agent. Blocking (ORM)."""
    if not (user.is_active and user.is_staff):
        return 403
    if not (user.has_perm("snapshots.view_agentsnapshot") or user.has_perm("snapshots.change_agentsnapshot")):
        return 403
    try:
        get_agent_for_timeline(agent_id=agent_id)
    except NotFound:
        return 404
    return 200


async def admin_timeline_stream(request: HttpRequest, object_id: str):
    """GET /admin/snapshots/agentsnapshot/{agent_id}/timeline/stream/: the agent's SSE stream for
    the admin's timeline page, authenticated by the admin session (same origin, so no token
    ever goes into a page). Resumes from ``Last-Event-ID``, as EventSource sends it on reconnect,
    else from ``?after_seq=``."""
    if not isinstance(request, ASGIRequest):
        return HttpResponse("The live stream is served only under ASGI.", status=503, content_type="text/plain")
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    hub = get_hub()
    agent_id = unquote(object_id)
    user = await request.auser()
    verdict = await hub.db.run(_authorize_operator, user, agent_id)
    if verdict != 200:
        return HttpResponse(status=verdict)
    cursor = request.headers.get("Last-Event-ID", "").strip() or request.GET.get("after_seq", "").strip()
    try:
        after_seq = _non_negative_int(cursor, "after_seq") if cursor else None
    except ValidationError:
        return HttpResponse("after_seq and Last-Event-ID are whole numbers.", status=400, content_type="text/plain")
    try:
        # The operator's streams count against the worker's bound, not a token's.
        slot = _take_slot(request, None)
        return _open_stream(request, hub, agent_id, slot=slot, after_seq=after_seq, epoch=None)
    except StreamCapacity as exc:
        response = HttpResponse(exc.message, status=exc.status, content_type="text/plain")
        response["Retry-After"] = str(exc.retry_after)
        return response
