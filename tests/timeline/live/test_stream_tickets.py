"""POST .../timeline/stream-tickets, the stream opened with ``?ticket=`` through the real ASGI
application, and CORS for the API and the stream (docs/api.md, "Stream tickets", "Browsers (CORS)")."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import AsyncClient, Client, override_settings
from django.utils.dateparse import parse_datetime

from chartr.asgi import application
from tests.factories import AgentFactory
from tests.timeline.live.test_views import fresh_hub  # noqa: F401 - a fixture
from timeline.live import hub as live_hub
from timeline.live.hub import Hub
from tokens.models import StreamTicket
from tokens.services import create_api_token, hash_token


def tickets_url(agent_id: str) -> str:
    return f"/api/v1/agents/{agent_id}/timeline/stream-tickets"


def bearer(raw: str) -> dict:
    return {"Authorization": f"Bearer {raw}"}


def mint(client: Client, agent_id: str, raw: str) -> dict:
    response = client.post(tickets_url(agent_id), headers=bearer(raw))
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_any_token_mints_a_ticket_for_one_agent(settings):
    settings.CHARTR_STREAM_TICKET_SECONDS = 60
    agent = AgentFactory()
    _, raw = create_api_token(name="reader", read_only=True)
    minted = mint(Client(), agent.pk, raw)
    assert set(minted) == {"ticket", "agent_id", "expires_at", "expires_in", "stream_url"}
    assert minted["agent_id"] == agent.pk and minted["expires_in"] == 60
    stored = StreamTicket.objects.get()
    assert stored.ticket_hash == hash_token(minted["ticket"])
    assert parse_datetime(minted["expires_at"]) == stored.expires_at
    url = urlsplit(minted["stream_url"])
    assert url.path == f"/api/v1/agents/{agent.pk}/timeline/stream"
    assert parse_qs(url.query) == {"ticket": [minted["ticket"]]}


@pytest.mark.django_db
def test_minting_refusals_use_the_envelope():
    agent = AgentFactory()
    _, raw = create_api_token(name="t")
    client = Client()
    cases = [
        (client.post(tickets_url(agent.pk)), 401, "not_authenticated"),
        (client.post(tickets_url(agent.pk), headers=bearer("nope")), 401, "not_authenticated"),
        (client.post(tickets_url("no-such-agent"), headers=bearer(raw)), 404, "not_found"),
        (client.get(tickets_url(agent.pk), headers=bearer(raw)), 405, "method_not_allowed"),
        (client.post(tickets_url(agent.pk), headers={**bearer(raw), "Accept": "text/html"}), 406, "not_acceptable"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.content
        assert response.json()["error"]["code"] == code
    assert not StreamTicket.objects.exists()


def open_stream(path: str, query: str, headers: tuple = ()) -> tuple[int, dict, bytes]:
    """GET the stream through chartr's ASGI application: its status, headers and first body, then go away."""

    async def scenario():
        hub = Hub(transport="local")
        previous = live_hub.set_hub(hub)
        sent: list[dict] = []
        gone = asyncio.Event()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), *headers],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 80),
        }
        first = True

        async def receive():
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        task = asyncio.create_task(application(scope, receive, send))
        try:
            for _ in range(100):
                if len(sent) > 1 or task.done():
                    break
                await asyncio.sleep(0.05)
        finally:
            gone.set()
            await asyncio.wait_for(task, 5)
            live_hub.set_hub(previous)
            await hub.aclose()
        start = sent[0]
        return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])

    return asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
@override_settings(CHARTR_SSE_KEEPALIVE_SECONDS=0.1)
def test_a_ticket_opens_the_stream_once_and_only_its_agents():
    agent, other = AgentFactory(), AgentFactory()
    _, raw = create_api_token(name="reader", read_only=True)
    minted = mint(Client(), agent.pk, raw)
    path = f"/api/v1/agents/{agent.pk}/timeline/stream"
    status, headers, body = open_stream(path, f"ticket={minted['ticket']}&after_seq=0")
    assert status == 200 and headers[b"Content-Type"].startswith(b"text/event-stream")
    assert b"event: agent" in body
    # spent: the same URL again (as EventSource's own reconnect would send it) is refused
    status, headers, body = open_stream(path, f"ticket={minted['ticket']}&after_seq=0")
    assert status == 401 and headers[b"WWW-Authenticate"] == b"Bearer"
    assert json.loads(body)["error"]["code"] == "stream_ticket_invalid"
    # another agent's ticket opens nothing here, and a token in the URL is still no credential
    other_ticket = mint(Client(), other.pk, raw)["ticket"]
    status, _, body = open_stream(path, f"ticket={other_ticket}")
    assert status == 403 and json.loads(body)["error"]["code"] == "stream_ticket_other_agent"
    status, _, body = open_stream(path, f"token={raw}")
    assert status == 401 and json.loads(body)["error"]["code"] == "not_authenticated"


CORS_MIDDLEWARE = "corsheaders.middleware.CorsMiddleware"


def with_cors(settings):
    settings.CORS_ALLOWED_ORIGINS = ["http://app.example"]
    settings.MIDDLEWARE = [CORS_MIDDLEWARE, *settings.MIDDLEWARE]


@pytest.mark.django_db
def test_no_cross_origin_access_unless_configured(settings):
    assert settings.CHARTR_CORS_ORIGINS == [] and CORS_MIDDLEWARE not in settings.MIDDLEWARE
    agent = AgentFactory()
    response = Client().options(
        tickets_url(agent.pk), headers={"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
    )
    assert "Access-Control-Allow-Origin" not in response


@pytest.mark.django_db
def test_a_named_origin_gets_preflight_and_answers_for_the_api(settings):
    with_cors(settings)
    agent = AgentFactory()
    _, raw = create_api_token(name="t")
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
    response = Client().options(
        tickets_url(agent.pk), headers={**preflight, "Access-Control-Request-Headers": "authorization"}
    )
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "http://app.example"
    assert "authorization" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response
    minted = Client().post(tickets_url(agent.pk), headers={**bearer(raw), "Origin": "http://app.example"})
    assert minted.status_code == 201 and minted["Access-Control-Allow-Origin"] == "http://app.example"
    stranger = Client().options(tickets_url(agent.pk), headers={**preflight, "Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in stranger
    outside = Client().options("/admin/login/", headers=preflight)
    assert "Access-Control-Allow-Origin" not in outside


@pytest.mark.django_db(transaction=True)
def test_the_stream_answers_preflight_and_refusals_cross_origin(settings, fresh_hub):  # noqa: F811
    with_cors(settings)
    agent = AgentFactory()
    path = f"/api/v1/agents/{agent.pk}/timeline/stream"
    origin = {"Origin": "http://app.example"}
    preflight = asyncio.run(
        AsyncClient().options(
            path,
            headers={
                **origin,
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "last-event-id",
            },
        )
    )
    assert preflight.status_code == 200 and preflight["Access-Control-Allow-Origin"] == "http://app.example"
    assert "last-event-id" in preflight["Access-Control-Allow-Headers"]
    refused = asyncio.run(AsyncClient().get(path + "?ticket=nope", headers=origin))
    assert refused.status_code == 401 and refused["Access-Control-Allow-Origin"] == "http://app.example"
    assert json.loads(refused.content)["error"]["code"] == "stream_ticket_invalid"
