"""The ASGI wrappers in chartr/serving.py, driven directly with ASGI messages."""

from __future__ import annotations

import asyncio
import contextvars
import json

from django.core.handlers.asgi import ASGIHandler

from chartr.serving import RequestGuard, SharedThreadAsgiHandler, body_send
from kernel.event_stream import EventStreamResponse

leaked = contextvars.ContextVar("leaked", default=None)


def call(app, *, path="/api/v1/projects", body_chunks=(b"",), headers=()):
    sent = []
    chunks = list(body_chunks)

    async def receive():
        body = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": list(headers)}
    asyncio.run(app(scope, receive, send))
    return sent


def status_and_body(sent):
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


async def failing_app(scope, receive, send):
    raise RuntimeError("boom")


async def echo_app(scope, receive, send):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def test_a_failure_before_the_response_is_a_json_500_under_the_api():
    status, headers, body = status_and_body(call(RequestGuard(failing_app, json_errors=True)))
    assert status == 500
    assert headers[b"content-type"] == b"application/json"
    assert json.loads(body) == {
        "error": {"code": "server_error", "message": "The server failed to handle this request."}
    }


def test_a_declared_length_over_the_limit_is_refused_without_reading():
    reads = []

    async def never_read(scope, receive, send):
        reads.append(True)

    sent = call(RequestGuard(never_read, limit_for=lambda path: 10), headers=[(b"content-length", b"11")])
    status, headers, body = status_and_body(sent)
    assert (status, json.loads(body)["error"]["code"]) == (413, "payload_too_large")
    assert headers[b"connection"] == b"close"
    assert reads == []


def test_an_undeclared_body_is_cut_off_at_the_limit_and_a_small_one_passes():
    limited = RequestGuard(echo_app, limit_for=lambda path: 10)
    assert status_and_body(call(limited, body_chunks=[b"123456", b"78901"]))[0] == 413
    assert status_and_body(call(limited, body_chunks=[b"12345", b"67890"])) == (200, {}, b"1234567890")


def test_a_body_slower_than_the_timeout_gets_408_before_the_app_runs_and_a_prompt_one_passes():
    calls = []

    async def app(scope, receive, send):
        calls.append(scope["path"])
        await echo_app(scope, receive, send)

    def slow_call(delay):
        sent = []
        chunks = [b"12345", b"67890"]

        async def receive():
            body = chunks.pop(0)
            if not chunks:
                await asyncio.sleep(delay)
            return {"type": "http.request", "body": body, "more_body": bool(chunks)}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/api/v1/x", "headers": [(b"content-length", b"10")]}
        asyncio.run(RequestGuard(app, limit_for=lambda path: 100, body_timeout=0.05)(scope, receive, send))
        return status_and_body(sent)

    status, headers, body = slow_call(0.2)
    assert (status, json.loads(body)["error"]["code"], headers[b"connection"]) == (408, "request_timeout", b"close")
    assert calls == []
    assert slow_call(0)[::2] == (200, b"1234567890")
    assert calls == ["/api/v1/x"]


def test_each_request_starts_with_an_empty_context():
    seen = []

    async def app(scope, receive, send):
        seen.append(leaked.get())
        leaked.set("from an earlier request")

    async def two_requests_in_one_task():
        wrapped = RequestGuard(app, fresh_context=True)
        leaked.set("connection-level value")
        await wrapped({"type": "http"}, None, None)
        await wrapped({"type": "http"}, None, None)

    asyncio.run(two_requests_in_one_task())
    assert seen == [None, None]


def test_body_messages_skip_the_wrappers_that_only_look_at_the_start():
    inner_sends = []

    async def app(scope, receive, send):
        inner_sends.append(body_send(send))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await body_send(send)({"type": "http.response.body", "body": b"frame", "more_body": True})
        await body_send(send)({"type": "http.response.body"})

    sent = []

    async def server_send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    wrapped = RequestGuard(app, close_when_draining=True, json_errors=True, limit_for=lambda path: 10)
    scope = {"type": "http", "method": "GET", "path": "/api/v1/x", "headers": []}
    asyncio.run(wrapped(scope, receive, server_send))
    assert inner_sends == [server_send]
    assert status_and_body(sent) == (200, {}, b"frame")


def _send_response(response) -> list[dict]:
    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(SharedThreadAsgiHandler().send_response(response, send))
    return sent


def test_an_event_stream_sends_each_frame_as_one_message_and_closes_its_frames():
    closed = []

    async def frames():
        try:
            yield b"event: a\ndata: 1\n\n"
            yield b"x" * (ASGIHandler.chunk_size + 1)  # Django would cut this one in two
        finally:
            closed.append(True)

    response = EventStreamResponse(frames())
    response["Cache-Control"] = "no-cache"
    sent = _send_response(response)
    start, *bodies = sent
    assert start["status"] == 200
    assert (b"Content-Type", b"text/event-stream; charset=utf-8") in start["headers"]
    assert (b"Cache-Control", b"no-cache") in start["headers"]
    assert [m.get("body") for m in bodies] == [b"event: a\ndata: 1\n\n", b"x" * (ASGIHandler.chunk_size + 1), None]
    assert [m.get("more_body", False) for m in bodies] == [True, True, False]
    assert closed == [True]


def test_an_event_stream_whose_content_was_replaced_goes_through_django():
    async def frames():
        yield b"original"

    async def wrapped():
        yield b"replaced"

    response = EventStreamResponse(frames())
    response.streaming_content = wrapped()
    assert response.frames is None
    assert status_and_body(_send_response(response))[2] == b"replaced"


class RecordingAccessLog:
    def __init__(self):
        self.lines = []

    def response(self, scope, status):
        self.lines.append((scope["path"], status))


def test_the_guard_writes_one_access_line_per_response_its_own_refusals_and_errors_included():
    access_log = RecordingAccessLog()

    def guarded(app):
        return RequestGuard(app, limit_for=lambda path: 10, json_errors=True, access_log=access_log)

    call(guarded(echo_app), body_chunks=[b"12345"])
    call(guarded(echo_app), path="/api/v1/big", body_chunks=[b"123456", b"78901"])
    call(guarded(failing_app), path="/api/v1/failing")
    assert access_log.lines == [("/api/v1/projects", 200), ("/api/v1/big", 413), ("/api/v1/failing", 500)]


def test_a_request_already_in_an_empty_context_runs_in_its_own_task():
    tasks = []

    async def app(scope, receive, send):
        tasks.append(asyncio.current_task())

    async def request_task():
        await RequestGuard(app, fresh_context=True)({"type": "http"}, None, None)
        return asyncio.current_task()

    async def main():
        # As uvicorn starts a request's task when the worker sets reset_contextvars.
        return await asyncio.create_task(request_task(), context=contextvars.Context())

    assert tasks == [asyncio.run(main())]
