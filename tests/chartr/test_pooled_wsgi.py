"""chartr/pooled_wsgi.py: a WSGI response goes back to the event loop whole, or streams when large."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import AsyncToSync

from chartr.pooled_wsgi import BUFFER_LIMIT, BufferedWsgiInstance
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


def run(app, sends_from_threads: list[bool] | None = None) -> list[dict]:
    sent: list[dict] = []
    requested = False

    async def receive():
        nonlocal requested
        if requested:
            await asyncio.Future()
        requested = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    original = AsyncToSync.__call__

    def counting_call(self, *args, **kwargs):
        if sends_from_threads is not None:
            sends_from_threads.append(True)
        return original(self, *args, **kwargs)

    AsyncToSync.__call__ = counting_call
    try:
        asyncio.run(PoolInstance(app)(http_scope("/x"), receive, send))
    finally:
        AsyncToSync.__call__ = original
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
