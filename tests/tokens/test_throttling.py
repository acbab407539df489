"""The per-token rate (tokens/throttling.py), counted in a store every worker and instance shares:
the database's ThrottleWindow rows, or Redis. One process's threads stand in for many workers here;
tests/process/test_limits.py counts across real worker processes."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections
from django.test import AsyncClient, override_settings

from tests.support.processes import REDIS_URL, redis_available
from timeline.live.hub import Hub, set_hub
from tokens.models import ThrottleWindow
from tokens.services import create_api_token
from tokens.throttling import DatabaseThrottleStore, RedisThrottleStore, throttle_wait


def hit_from_threads(store, token_id: int, *, threads: int = 4, each: int = 10) -> list[int]:
    counts: list[int] = []
    lock = threading.Lock()

    def work():
        try:
            for _ in range(each):
                hits = store.hit(token_id, 60, 1000)
                with lock:
                    counts.append(hits)
        finally:
            connection.close()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return counts


@pytest.mark.django_db(transaction=True)
def test_the_database_counts_every_request_once_whoever_races():
    token, _ = create_api_token(name="t")
    counts = hit_from_threads(DatabaseThrottleStore(), token.pk)
    assert sorted(counts) == list(range(1, 41))
    assert ThrottleWindow.objects.get(token=token).hits == 40


@pytest.mark.django_db(transaction=True)
def test_a_new_window_deletes_the_tokens_past_ones_only():
    token, _ = create_api_token(name="t")
    other, _ = create_api_token(name="other")
    store = DatabaseThrottleStore()
    store.hit(token.pk, 60, 1)
    store.hit(other.pk, 60, 1)
    assert store.hit(token.pk, 60, 2) == 1
    assert store.hit(token.pk, 60, 2) == 2
    rows = sorted(ThrottleWindow.objects.values_list("token_id", "window_index", "hits"))
    assert rows == sorted([(token.pk, 2, 2), (other.pk, 1, 1)])


@pytest.mark.django_db(transaction=True)
def test_redis_counts_every_request_once_and_forgets_the_window_after_it():
    if not redis_available():
        pytest.skip("Redis is not reachable")
    store = RedisThrottleStore(REDIS_URL)
    token_id = int(time.time() * 1000)  # a key no earlier run left behind
    counts = hit_from_threads(store, token_id)
    assert sorted(counts) == list(range(1, 41))
    ttl = store.client.ttl(f"{store.prefix}:{token_id}:60:1000")
    assert 0 < ttl <= 61


@pytest.mark.django_db
def test_an_unreachable_store_lets_requests_through_and_says_so(caplog):
    token, _ = create_api_token(name="t")
    store = RedisThrottleStore("redis://127.0.0.1:1/0")
    with override_settings(CHARTR_API_THROTTLE_RATE="1/m"):
        assert [throttle_wait(token, store=store) for _ in range(3)] == [None, None, None]
    assert "unreachable" in caplog.text


@pytest.fixture
def request_threads_closed():
    """No session of the test's requests outlives it (PostgreSQL would not drop the test database
    at the end of the run): the stream's view reads on the live hub's threads, so the test gets a
    hub of its own, closed after it; AsyncClient runs the other views on asgiref's one
    thread-sensitive thread, whose connection is closed there."""
    hub = Hub(transport="local")
    previous = set_hub(hub)
    yield hub
    set_hub(previous)
    asyncio.run(hub.aclose())
    asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())


@pytest.mark.django_db(transaction=True)
@override_settings(CHARTR_API_THROTTLE_RATE="2/h", CHARTR_REDIS_URL="")
def test_opening_a_stream_counts_against_the_tokens_rate(request_threads_closed):
    _, raw = create_api_token(name="t")
    client = AsyncClient()
    headers = {"Authorization": f"Bearer {raw}"}
    statuses = [asyncio.run(client.get("/api/v1/projects", headers=headers)).status_code]
    response = asyncio.run(client.get("/api/v1/agents/nobody/timeline/stream", headers=headers))
    statuses.append(response.status_code)
    response = asyncio.run(client.get("/api/v1/agents/nobody/timeline/stream", headers=headers))
    assert statuses == [200, 404]
    assert response.status_code == 429 and 1 <= int(response["Retry-After"]) <= 3600
    assert json.loads(response.content)["error"]["code"] == "throttled"
