"""Open streams per worker (503 ``stream_capacity``) and per token (429 ``too_many_streams``):
timeline/live/slots.py, and the stream view answering with them."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import AsyncClient, override_settings

from chartr.asgi import application
from tests.factories import AgentFactory
from timeline.errors import StreamCapacity, TooManyStreams
from timeline.live import hub as live_hub
from timeline.live.hub import Hub
from timeline.live.slots import StreamSlots, stream_slots
from tokens.services import create_api_token


@override_settings(CHARTR_MAX_STREAMS=3, CHARTR_MAX_STREAMS_PER_TOKEN=2)
def test_slots_bound_each_token_and_the_worker_and_come_back_once_released():
    slots = StreamSlots()
    first, second = slots.take("a"), slots.take("a")
    with pytest.raises(TooManyStreams):
        slots.take("a")
    third = slots.take(None)
    with pytest.raises(StreamCapacity):
        slots.take("b")
    first.release()
    first.release()  # twice is once
    assert (slots.open, dict(slots.by_owner)) == (2, {"a": 1})
    fourth = slots.take("a")
    for slot in (second, third, fourth):
        slot.release()
    assert (slots.open, dict(slots.by_owner)) == (0, {})


@pytest.fixture
def fresh_hub():
    hub = Hub(transport="local")
    previous = live_hub.set_hub(hub)
    yield hub
    live_hub.set_hub(previous)
    asyncio.run(hub.aclose())


def stream_url(agent_id: str) -> str:
    return f"/api/v1/agents/{agent_id}/timeline/stream"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("owner", "limits", "status", "code", "retry_after"),
    [
        ("token", {"CHARTR_MAX_STREAMS_PER_TOKEN": 1}, 429, "too_many_streams", "5"),
        (None, {"CHARTR_MAX_STREAMS": 1}, 503, "stream_capacity", "2"),
    ],
)
def test_a_stream_over_a_bound_gets_the_envelope_with_retry_after(fresh_hub, owner, limits, status, code, retry_after):
    agent = AgentFactory()
    token, raw = create_api_token(name="t")
    with override_settings(**limits):
        held = stream_slots.take(token.pk if owner == "token" else None)
        try:
            response = asyncio.run(AsyncClient().get(stream_url(agent.pk), headers={"Authorization": f"Bearer {raw}"}))
        finally:
            held.release()
    assert response.status_code == status
    assert response["Retry-After"] == retry_after
    assert json.loads(response.content)["error"]["code"] == code
    assert stream_slots.open == 0


@pytest.mark.django_db(transaction=True)
@override_settings(CHARTR_SSE_KEEPALIVE_SECONDS=0.1)
def test_a_stream_that_ends_gives_its_slot_back_through_the_real_handler():
    agent = AgentFactory()
    _, raw = create_api_token(name="t")

    async def scenario():
        hub = Hub(transport="local")
        previous = live_hub.set_hub(hub)
        disconnect = asyncio.Event()
        sent: list[dict] = []
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": stream_url(agent.pk),
            "raw_path": stream_url(agent.pk).encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {raw}".encode())],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 80),
        }
        requested = False

        async def receive():
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await disconnect.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        try:
            task = asyncio.create_task(application(scope, receive, send))
            for _ in range(100):
                if sent:
                    break
                await asyncio.sleep(0.05)
            during = stream_slots.open
            disconnect.set()
            await asyncio.wait_for(task, 5)
            return sent[0]["status"], during, stream_slots.open
        finally:
            live_hub.set_hub(previous)
            await hub.aclose()

    assert asyncio.run(scenario()) == (200, 1, 0)
