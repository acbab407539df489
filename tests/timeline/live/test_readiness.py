"""/readyz follows the live transport's service: Redis must answer, a started LISTEN connection must be up."""

from __future__ import annotations

import asyncio

import pytest
from django.test import override_settings

from kernel import readiness
from tests.support.processes import REDIS_URL, redis_available
from timeline.live.hub import Hub, set_hub
from timeline.live.transports import postgres as postgres_module
from timeline.live.transports.local import LocalTransport
from timeline.live.transports.postgres import PostgresTransport
from timeline.live.transports.redis import RedisTransport

pytestmark = pytest.mark.django_db


@pytest.fixture
def hub_with():
    previous = set_hub(None)
    made: list[Hub] = []

    def install(transport) -> Hub:
        hub = Hub(transport=transport)
        made.append(hub)
        set_hub(hub)
        return hub

    yield install
    set_hub(previous)
    for hub in made:
        hub.db.shutdown()


@override_settings(CHARTR_REDIS_URL="redis://127.0.0.1:1/0")
def test_readyz_is_503_naming_redis_while_it_is_unreachable(client, hub_with):
    hub_with(RedisTransport(channel_name="c", origin="o"))
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "redis_unreachable"}


def test_readyz_is_200_once_redis_answers(client, hub_with):
    if not redis_available():
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    with override_settings(CHARTR_REDIS_URL=REDIS_URL):
        hub_with(RedisTransport(channel_name="c", origin="o"))
        assert client.get("/readyz").json() == {"status": "ready"}


def test_the_local_transport_depends_on_nothing(client, hub_with):
    hub_with(LocalTransport(channel_name="c", origin="o"))
    assert client.get("/readyz").status_code == 200


def test_a_lost_listen_connection_fails_readiness_until_it_is_back(monkeypatch):
    """A started listener that cannot connect names the LISTEN connection; one never started is no dependency yet."""
    monkeypatch.setattr(
        postgres_module,
        "postgres_connect_kwargs",
        lambda: {"host": "127.0.0.1", "port": 1, "dbname": "x", "connect_timeout": 1},
    )
    transport = PostgresTransport(channel_name="c", origin="o")
    assert transport.readiness_problem() is None

    async def scenario() -> str | None:
        transport.start(asyncio.get_running_loop(), receive=lambda payload: None, on_connect=lambda: None)
        await asyncio.sleep(0.3)  # the first attempt is refused
        problem = transport.readiness_problem()
        await transport.aclose()
        return problem

    assert asyncio.run(scenario()) == "live_listen_unreachable"
    assert transport.readiness_problem() is None  # stopped, on a closed loop: nothing to wait for


def test_a_check_that_raises_counts_as_failing(monkeypatch):
    def broken_dependency():
        raise RuntimeError("boom")

    monkeypatch.setattr(readiness, "_checks", [broken_dependency])
    assert readiness.first_problem() == "broken_dependency_failed"
