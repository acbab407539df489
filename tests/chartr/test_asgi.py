"""chartr/asgi.py: the live stream on the stream application, everything else on the sync pool."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from django.core.signals import request_finished, request_started

from chartr.asgi import application, has_coroutine_view


def http_scope(path: str, headers: list[tuple[bytes, bytes]] | None = None) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


async def answer(scope: dict) -> tuple[int, bytes]:
    sent: list[dict] = []
    requested = False

    async def receive():
        nonlocal requested
        if requested:  # the client stays connected until the response is complete
            await asyncio.Future()
        requested = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await application(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def call(scope: dict) -> tuple[int, bytes]:
    return asyncio.run(answer(scope))


@pytest.fixture
def request_signals():
    seen: list[tuple[str, str]] = []

    def started(**kwargs):
        seen.append(("started", threading.current_thread().name))

    def finished(**kwargs):
        seen.append(("finished", threading.current_thread().name))

    request_started.connect(started)
    request_finished.connect(finished)
    yield seen
    request_started.disconnect(started)
    request_finished.disconnect(finished)


def test_sync_requests_run_on_the_pool_and_finish_properly(request_signals, settings):
    # More requests at once than the pool has threads: each runs off the event loop's
    # thread, on one of at most CHARTR_SYNC_THREADS threads, whatever the timing.
    requests = 2 * settings.CHARTR_SYNC_THREADS + 1

    async def all_at_once():
        return await asyncio.gather(*(answer(http_scope("/healthz")) for _ in range(requests)))

    answers = asyncio.run(all_at_once())
    assert all(status == 200 and json.loads(body) == {"status": "ok"} for status, body in answers)
    # request_finished is where Django recycles database connections: the
    # adapter must close the response so it fires, in the thread that served it.
    started = [name for event, name in request_signals if event == "started"]
    finished = [name for event, name in request_signals if event == "finished"]
    assert len(started) == len(finished) == requests
    assert sorted(started) == sorted(finished)
    assert threading.main_thread().name not in started
    assert len(set(started)) <= settings.CHARTR_SYNC_THREADS


@pytest.mark.django_db
def test_the_stream_runs_on_the_async_handler():
    # Under the WSGI path the stream view would answer 503 asgi_required; here
    # it reaches its own authentication and refuses the missing token.
    status, body = call(http_scope("/api/v1/agents/anyone/timeline/stream"))
    assert status == 401
    assert json.loads(body)["error"]["code"] == "not_authenticated"


@pytest.mark.django_db
def test_the_admin_stream_runs_on_the_async_handler_and_a_404_on_the_pool(request_signals):
    # The admin's stream view is a coroutine too: on the WSGI pool it would answer 503; on the
    # async handler it reaches its check of the session and refuses an anonymous visitor.
    status, _ = call(http_scope("/admin/snapshots/agentsnapshot/anyone/timeline/stream/"))
    assert status == 403
    assert call(http_scope("/api/v1/nowhere"))[0] == 404
    assert threading.main_thread().name not in [name for _, name in request_signals[-2:]]


def test_a_stream_request_whose_query_is_not_utf8_gets_400_in_the_envelope():
    scope = {**http_scope("/api/v1/agents/anyone/timeline/stream"), "query_string": b"after_seq=\xff"}
    status, body = call(scope)
    assert status == 400
    assert json.loads(body)["error"]["code"] == "invalid"


def test_the_router_keeps_each_paths_answer_under_its_url_configuration(settings):
    from chartr.asgi import resolves_to_coroutine

    resolves_to_coroutine.cache_clear()
    stream, timeline = "/api/v1/agents/a1/timeline/stream", "/api/v1/agents/a1/timeline"
    for _ in range(2):  # the second time from the cache, the same answers
        assert resolves_to_coroutine(settings.ROOT_URLCONF, stream) is True
        assert resolves_to_coroutine(settings.ROOT_URLCONF, timeline) is False
        assert resolves_to_coroutine(settings.ROOT_URLCONF, "/api/v1/nowhere") is False
    assert resolves_to_coroutine.cache_info().hits == 3
    # Another URL configuration is asked on its own, not answered from the first one's entries.
    settings.ROOT_URLCONF = "tests.chartr.stream_only_urls"
    assert has_coroutine_view(http_scope(timeline)) is True
    assert has_coroutine_view(http_scope(stream)) is False
