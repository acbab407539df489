"""chartr/pooled_wsgi.py: a WSGI response goes back to the event loop whole, or streams when large."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from chartr.pooled_wsgi import BUFFER_LIMIT, SPOOL_LIMIT, BufferedWsgiInstance
from tests.chartr.test_asgi import http_scope

pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="test-pooled")


class PoolInstance(BufferedWsgiInstance):
    executor = pool


def wsgi_app(chunks: list[bytes], *, content_length: int | None = None, threads: list[str] | None = None):
    def app(environ, start_response):
        headers = [("Content-Type", "text/plain")]
        if content_length is not None:
            headers.append(("Content-Length", str(content_length)))
        start_response("201 Created", headers)
        try:
            for chunk in chunks:
                if threads is not None:
                    threads.append(threading.current_thread().name)
                yield chunk
        finally:
            if threads is not None:
                threads.append(threading.current_thread().name)

    return app


def run(
    app, sends_from_threads: list[bool] | None = None, *, body_chunks: list[bytes] = (b"",), scope: dict | None = None
) -> list[dict]:
    sent: list[dict] = []
    sent_on: set[int] = set()
    messages = [
        {"type": "http.request", "body": chunk, "more_body": n < len(body_chunks) - 1}
        for n, chunk in enumerate(body_chunks)
    ]

    async def receive():
        if not messages:
            await asyncio.Future()
        return messages.pop(0)

    async def send(message):
        sent_on.add(threading.get_ident())
        sent.append(message)

    class CountingInstance(PoolInstance):
        def sync_send(self, message):
            if sends_from_threads is not None:
                sends_from_threads.append(True)
            super().sync_send(message)

    async def serve():
        await CountingInstance(app)(scope or http_scope("/x"), receive, send)
        return threading.get_ident()

    loop_thread = asyncio.run(serve())
    assert sent_on <= {loop_thread}  # every message is sent by the event loop, whoever produced it
    return sent


def test_a_small_response_is_sent_from_the_event_loop_in_two_messages():
    hops: list[bool] = []
    sent = run(wsgi_app([b"hello ", b"world"]), hops)
    assert hops == []  # no thread-to-loop round trip
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 201 and (b"content-type", b"text/plain") in sent[0]["headers"]
    assert sent[1]["body"] == b"hello world" and not sent[1].get("more_body")


def test_the_body_stops_at_the_responses_content_length():
    sent = run(wsgi_app([b"abc", b"def", b"never"], content_length=5))
    assert b"".join(m.get("body", b"") for m in sent) == b"abcde"


def test_a_large_response_streams_from_the_thread_that_runs_the_app():
    chunk = b"x" * (64 * 1024)
    chunks = [chunk] * (BUFFER_LIMIT // len(chunk) + 3)
    threads: list[str] = []
    sent = run(wsgi_app(chunks, threads=threads))
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert sent[0]["type"] == "http.response.start"
    assert b"".join(m.get("body", b"") for m in bodies) == b"".join(chunks)
    assert len(bodies) > 2 and all(m.get("more_body") for m in bodies[:-1]) and not bodies[-1].get("more_body")
    # Iterated to the end and closed in one pool thread, where Django's connection lives.
    assert len(set(threads)) == 1 and threads[0].startswith("test-pooled")


def test_an_empty_response_still_starts_and_ends():
    sent = run(wsgi_app([]))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b""


def body_echo(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return [environ["wsgi.input"].read()]


def test_a_body_sent_in_one_message_reaches_the_app_whole():
    sent = run(body_echo, body_chunks=[b'{"items": []}'])
    assert sent[1]["body"] == b'{"items": []}'


def test_a_body_sent_in_chunks_reaches_the_app_whole_even_past_the_spool_limit():
    chunks = [b"a" * SPOOL_LIMIT, b"b" * 10, b"c" * SPOOL_LIMIT]
    sent = run(body_echo, body_chunks=chunks)
    assert b"".join(m.get("body", b"") for m in sent) == b"".join(chunks)


def test_the_app_runs_in_a_copy_of_the_requests_context():
    marker = contextvars.ContextVar("marker", default="unset")
    seen = []

    def app(environ, start_response):
        seen.append(marker.get())
        marker.set("set in the thread")
        start_response("204 No Content", [])
        return []

    async def serve():
        marker.set("set on the loop")
        sent = []

        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            sent.append(message)

        await PoolInstance(app)(http_scope("/x"), receive, send)
        return marker.get(), sent

    after, sent = asyncio.run(serve())
    assert seen == ["set on the loop"] and after == "set on the loop"
    assert sent[0]["status"] == 204


def test_a_request_message_of_another_type_is_refused():
    async def receive():
        return {"type": "http.disconnect"}

    async def send(message):  # pragma: no cover - never reached
        raise AssertionError(message)

    with pytest.raises(ValueError, match="non-HTTP-request"):
        asyncio.run(PoolInstance(body_echo)(http_scope("/x"), receive, send))
