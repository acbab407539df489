"""chartr/shared_thread.py, and the stream handler's request signals going through it."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from asgiref.sync import sync_to_async
from django.core.signals import request_finished, request_started

from chartr import shared_thread
from chartr.serving import SharedThreadAsgiHandler
from chartr.shared_thread import SharedThreadCalls
from kernel.event_stream import EventStreamResponse
from tests.chartr.test_asgi import http_scope

request_number = contextvars.ContextVar("request_number")


def test_calls_run_on_asgirefs_shared_thread_in_order_each_in_its_own_context(monkeypatch):
    hops = []
    real_sync_to_async = shared_thread.sync_to_async

    def counting_sync_to_async(fn, **kwargs):
        hops.append(kwargs)
        return real_sync_to_async(fn, **kwargs)

    monkeypatch.setattr(shared_thread, "sync_to_async", counting_sync_to_async)
    calls = SharedThreadCalls()
    ran: list[int] = []

    def call() -> tuple[int, int]:
        ran.append(request_number.get())
        return request_number.get(), threading.get_ident()

    async def one_request(n: int):
        request_number.set(n)
        return await calls.run(call)

    async def main():
        shared = await sync_to_async(threading.get_ident, thread_sensitive=True)()
        # Each a task of its own, so each with its own context, as requests are.
        results = await asyncio.gather(*(asyncio.create_task(one_request(n)) for n in range(50)))
        return shared, results

    shared, results = asyncio.run(main())
    assert results == [(n, shared) for n in range(50)]
    assert ran == list(range(50))
    assert 1 <= len(hops) < 50 and all(hop == {"thread_sensitive": True} for hop in hops)


def test_an_exception_goes_to_its_own_caller_only():
    calls = SharedThreadCalls()

    def fail():
        raise ValueError("this one")

    async def main():
        return await asyncio.gather(calls.run(fail), calls.run(lambda: "fine"), return_exceptions=True)

    failed, fine = asyncio.run(main())
    assert isinstance(failed, ValueError) and fine == "fine"


@pytest.fixture
def request_signals():
    seen: list[tuple[str, int]] = []

    def started(**kwargs):
        seen.append(("started", threading.get_ident()))

    def finished(**kwargs):
        seen.append(("finished", threading.get_ident()))

    request_started.connect(started)
    request_finished.connect(finished)
    yield seen
    request_started.disconnect(started)
    request_finished.disconnect(finished)


class FramesHandler(SharedThreadAsgiHandler):
    """The stream handler answering every request with the same two frames, then, if
    ``endless``, nothing more until the client goes."""

    def __init__(self, *, endless: bool):
        super().__init__()
        self.endless = endless

    async def run_get_response(self, request):
        async def frames():
            yield b"data: 1\n\n"
            yield b"data: 2\n\n"
            if self.endless:
                await asyncio.Future()

        return EventStreamResponse(frames())


def serve_streams(count: int, *, disconnect: bool) -> tuple[int, list[list[dict]]]:
    """``count`` concurrent requests; each client goes away once it has both frames of an
    endless stream (``disconnect``), or stays until the response is complete."""
    handler = FramesHandler(endless=disconnect)

    async def one() -> list[dict]:
        sent: list[dict] = []
        requested = False
        both_frames = asyncio.Event()

        async def receive():
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if disconnect:
                await both_frames.wait()
                return {"type": "http.disconnect"}
            await asyncio.Future()

        async def send(message):
            sent.append(message)
            if sum(1 for m in sent if m.get("body")) == 2:
                both_frames.set()

        await handler(http_scope("/stream"), receive, send)
        return sent

    async def main():
        shared = await sync_to_async(threading.get_ident, thread_sensitive=True)()
        return shared, await asyncio.gather(*(one() for _ in range(count)))

    return asyncio.run(main())


@pytest.mark.parametrize("disconnect", [False, True], ids=["response-complete", "client-gone"])
def test_each_stream_sends_its_request_signals_once_on_the_shared_thread(request_signals, disconnect):
    shared, responses = serve_streams(20, disconnect=disconnect)
    for sent in responses:
        assert [m["body"] for m in sent if m.get("body")] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert sorted(event for event, _ in request_signals) == ["finished"] * 20 + ["started"] * 20
    assert {thread for _, thread in request_signals} == {shared}
