"""The ASGI pieces in chartr/serving.py, driven directly with ASGI messages."""

from __future__ import annotations

import asyncio

from django.core.handlers.asgi import ASGIHandler

from chartr.serving import Front, StreamApplication, body_parts, body_send
from kernel import draining
from kernel.event_stream import EventStreamResponse


def call(app, *, path="/api/v1/projects", headers=((b"host", b"chartr"),), http_version="1.1", method="POST"):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": list(headers), "http_version": http_version}
    asyncio.run(app(scope, receive, send))
    return sent


def status_and_body(sent):
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


async def failing_app(scope, receive, send):
    raise RuntimeError("boom")


async def ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_failure_before_the_response_is_a_json_500_under_the_api():
    status, headers, body = status_and_body(call(Front(failing_app)))
    assert status == 500
    assert headers[b"content-type"] == b"application/json"
    assert b'"code": "server_error"' in body


def test_an_http_1_1_request_without_host_is_refused_before_the_app_and_1_0_is_not():
    status, headers, body = status_and_body(call(Front(ok_app), headers=()))
    assert (status, headers[b"connection"]) == (400, b"close")
    assert b'"code": "invalid"' in body and b"Host" in body
    assert status_and_body(call(Front(ok_app), headers=(), http_version="1.0"))[0] == 200
    assert status_and_body(call(Front(ok_app)))[0] == 200


def test_a_body_without_a_length_gets_411_before_the_app_reads_it():
    chunked = ((b"host", b"chartr"), (b"transfer-encoding", b"chunked"))
    status, _, body = status_and_body(call(Front(ok_app), headers=chunked))
    assert status == 411 and b'"code": "length_required"' in body
    with_length = (*chunked, (b"content-length", b"2"))
    assert status_and_body(call(Front(ok_app), headers=with_length))[0] == 200


def test_every_response_says_connection_close_while_draining():
    draining.start_draining()
    try:
        _, headers, _ = status_and_body(call(Front(ok_app)))
    finally:
        draining.reset()
    assert headers[b"connection"] == b"close"
    assert b"connection" not in status_and_body(call(Front(ok_app)))[1]


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

    scope = {"type": "http", "method": "GET", "path": "/api/v1/x", "headers": [], "http_version": "1.0"}
    asyncio.run(Front(app)(scope, None, server_send))
    assert inner_sends == [server_send]
    assert status_and_body([{"type": "http.response.start", "status": 200, "headers": []}, *sent[1:]])[2] == b"frame"


def _send_until_disconnect(parts, *, disconnect_after: float | None = None) -> list[dict]:
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        if disconnect_after is None:
            await asyncio.Future()
        await asyncio.sleep(disconnect_after)
        return {"type": "http.disconnect"}

    asyncio.run(StreamApplication.send_until_disconnect(parts, receive, send))
    return sent


def test_an_event_stream_sends_each_frame_as_one_message_and_closes_its_frames():
    closed = []

    async def frames():
        try:
            yield b"event: a\ndata: 1\n\n"
            yield b"x" * (ASGIHandler.chunk_size + 1)  # Django would cut this one in two
        finally:
            closed.append(True)

    bodies = _send_until_disconnect(frames())
    assert [m.get("body") for m in bodies] == [b"event: a\ndata: 1\n\n", b"x" * (ASGIHandler.chunk_size + 1), None]
    assert [m.get("more_body", False) for m in bodies] == [True, True, False]
    assert closed == [True]


def test_a_client_going_away_ends_an_idle_stream_and_closes_its_frames():
    closed = []

    async def frames():
        try:
            yield b": hello\n\n"
            await asyncio.Future()  # an idle stream: nothing more until the client leaves
        finally:
            closed.append(True)

    bodies = _send_until_disconnect(frames(), disconnect_after=0.05)
    assert [m.get("body") for m in bodies] == [b": hello\n\n"]
    assert closed == [True]


def test_an_event_stream_whose_content_was_replaced_goes_through_django():
    async def frames():
        yield b"original"

    async def wrapped():
        yield b"replaced"

    response = EventStreamResponse(frames())
    response.streaming_content = wrapped()
    assert response.frames is None
    bodies = _send_until_disconnect(body_parts(response))
    assert b"".join(m.get("body", b"") for m in bodies) == b"replaced"


class RecordingAccessLog:
    def __init__(self):
        self.lines = []

    def response(self, scope, status):
        self.lines.append((scope["path"], status))


def test_the_front_writes_one_access_line_per_response_its_own_refusals_and_errors_included():
    access_log = RecordingAccessLog()
    call(Front(ok_app, access_log=access_log))
    call(Front(ok_app, access_log=access_log), path="/api/v1/no-host", headers=())
    call(Front(failing_app, access_log=access_log), path="/api/v1/failing")
    assert access_log.lines == [("/api/v1/projects", 200), ("/api/v1/no-host", 400), ("/api/v1/failing", 500)]
