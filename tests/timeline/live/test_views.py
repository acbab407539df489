"""The stream view's answers before streaming (auth, errors), its disconnect handling through
the real ASGI handler, and the provisional endpoint."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import AsyncClient, override_settings
from rest_framework.test import APIClient

from chartr.asgi import application
from snapshots.services import archive_agent
from tests.factories import AgentFactory
from timeline.live import hub as live_hub
from timeline.live.hub import Hub
from tokens.services import create_api_token, revoke_api_token


@pytest.fixture
def fresh_hub():
    """A hub of its own, closed after the test so its database threads' sessions end."""
    hub = Hub(transport="local")
    previous = live_hub.set_hub(hub)
    yield hub
    live_hub.set_hub(previous)
    asyncio.run(hub.aclose())


def stream_url(agent_id: str) -> str:
    return f"/api/v1/agents/{agent_id}/timeline/stream"


def bearer(raw: str) -> dict:
    return {"Authorization": f"Bearer {raw}"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "headers, query, status, code",
    [
        ({}, "", 401, "not_authenticated"),
        ({"Authorization": "Bearer nope"}, "", 401, "not_authenticated"),
        ({"Authorization": "Basic abc"}, "", 401, "not_authenticated"),
        ("token", "?after_seq=-1", 400, "invalid"),
        ("token", "?after_seq=x", 400, "invalid"),
        ("token", "?after_seq=99999999999999999999", 400, "invalid"),
        ("token", "?updates=yes", 400, "invalid"),
        ("token", "?after_seq=1&after_seq=2", 400, "invalid"),
        ({"Last-Event-ID": "abc"}, "", 400, "invalid"),
        ({"Last-Event-ID": "+5"}, "", 400, "invalid"),
        ({"Last-Event-ID": "٣"}, "", 400, "invalid"),
        ({"Last-Event-ID": ""}, "", 400, "invalid"),
        # after_seq is checked even when Last-Event-ID decides the resume point.
        ({"Last-Event-ID": "1"}, "?after_seq=99999999999999999999", 400, "invalid"),
    ],
)
def test_stream_refusals_use_the_api_error_envelope(fresh_hub, headers, query, status, code):
    agent = AgentFactory()
    _, raw = create_api_token(name="t")
    if headers == "token":
        headers = bearer(raw)
    elif "Last-Event-ID" in headers:
        headers = {**headers, **bearer(raw)}
        headers["Last-Event-ID"] = headers["Last-Event-ID"].encode().decode("latin-1")
    response = asyncio.run(AsyncClient().get(stream_url(agent.pk) + query, headers=headers))
    assert response.status_code == status
    body = json.loads(response.content)
    assert body["error"]["code"] == code and body["error"]["message"]
    if status == 401:
        assert response["WWW-Authenticate"] == "Bearer"
    if status == 400:
        assert body["error"]["fields"]


@pytest.mark.django_db(transaction=True)
def test_stream_unknown_agent_revoked_token_and_wrong_method(fresh_hub):
    token, raw = create_api_token(name="t")
    client = AsyncClient()
    response = asyncio.run(client.get(stream_url("no-such-agent"), headers=bearer(raw)))
    assert response.status_code == 404
    assert json.loads(response.content)["error"]["code"] == "not_found"
    agent = AgentFactory()
    response = asyncio.run(client.post(stream_url(agent.pk), headers=bearer(raw)))
    assert response.status_code == 405 and response["Allow"] == "GET"
    assert json.loads(response.content)["error"]["code"] == "method_not_allowed"
    revoke_api_token(token=token)
    response = asyncio.run(client.get(stream_url(agent.pk), headers=bearer(raw)))
    assert response.status_code == 401


@pytest.mark.django_db(transaction=True)
@override_settings(CHARTR_SSE_KEEPALIVE_SECONDS=0.1)
def test_client_disconnect_releases_the_subscription():
    """Through Django's real ASGI handler: the client goes away, the subscription goes with it."""
    agent = AgentFactory()
    _, raw = create_api_token(name="t", read_only=True)  # a read-only token may stream

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
            "query_string": b"after_seq=0",
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
                if any(b"keep-alive" in m.get("body", b"") for m in sent):
                    break
                await asyncio.sleep(0.05)
            assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
            assert dict(sent[0]["headers"])[b"Content-Type"].startswith(b"text/event-stream")
            body = b"".join(m.get("body", b"") for m in sent[1:])
            assert b"event: agent" in body
            assert hub.subscriber_count(agent.pk) == 1
            disconnect.set()
            await asyncio.wait_for(task, 5)
            assert hub.subscriber_count() == 0
            assert hub.channels == {}
        finally:
            live_hub.set_hub(previous)
            await hub.aclose()

    asyncio.run(scenario())


# --- Provisional ------------------------------------------------------------------


def provisional_url(agent_id: str) -> str:
    return f"/api/v1/agents/{agent_id}/timeline/provisional"


@pytest.fixture
def api():
    _, raw = create_api_token(name="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.mark.django_db
def test_provisional_is_accepted_and_never_stored(api):
    agent = AgentFactory()
    response = api.post(
        provisional_url(agent.pk),
        {"item": {"type": "assistant_message", "text": "par"}, "item_id": "m1"},
        format="json",
    )
    assert response.status_code == 202, response.content
    assert response.json() == {"agent_id": agent.pk, "item_id": "m1"}
    agent.refresh_from_db()
    assert agent.timeline_head.head_seq == 0 and not agent.timeline_rows.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, field",
    [
        ({"item": {"type": "tool_call", "callId": "c", "name": "n", "status": "bogus"}}, "item"),
        ({"item": {"text": "no type"}}, "item"),
        ({"item": "not an object"}, "item"),
        ({"item": {"type": "user_message", "text": "a\x00b"}}, "item"),
        ({"item": {"type": "user_message", "text": "x"}, "item_id": 5}, "item_id"),
        ({"item": {"type": "user_message", "text": "x"}, "item_id": ""}, "item_id"),
        ({}, "item"),
    ],
)
def test_provisional_validation(api, body, field):
    agent = AgentFactory()
    response = api.post(provisional_url(agent.pk), body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    # The strict JSON parser names the exact spot (e.g. "item.text" for a NUL inside the item).
    assert error["code"] == "invalid" and any(name.split(".")[0] == field for name in error["fields"])


@pytest.mark.django_db
def test_provisional_refusals(api):
    item = {"item": {"type": "user_message", "text": "x"}}
    response = api.post(provisional_url("missing"), item, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")

    agent = AgentFactory()
    with override_settings(CHARTR_MAX_ITEM_BYTES=100):
        response = api.post(
            provisional_url(agent.pk), {"item": {"type": "user_message", "text": "x" * 200}}, format="json"
        )
    assert (response.status_code, response.json()["error"]["code"]) == (413, "payload_too_large")

    _, read_only = create_api_token(name="ro", read_only=True)
    response = APIClient().post(
        provisional_url(agent.pk), item, format="json", HTTP_AUTHORIZATION=f"Bearer {read_only}"
    )
    assert response.status_code == 403

    archive_agent(agent=agent)
    response = api.post(provisional_url(agent.pk), item, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "archived")


@pytest.mark.django_db
def test_stream_under_wsgi_says_it_needs_asgi():
    agent = AgentFactory()
    _, raw = create_api_token(name="t")
    response = APIClient().get(stream_url(agent.pk), HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "asgi_required"


@pytest.mark.parametrize("raw", ["99999999999999999999", "9" * 5000, "0" * 30 + "7"])
def test_a_last_event_id_of_any_length_of_digits_is_a_cursor_not_a_crash(raw):
    """Thousands of digits are more than int() converts by default; the answer is the same as for any seq past the head."""
    from timeline.live.views import MAX_SEQ, _last_event_id

    assert _last_event_id(raw) == ((7 if raw.endswith("7") else MAX_SEQ), None)


def test_a_last_event_id_may_carry_the_update_cursor_and_updates_is_0_or_1():
    from django.core.exceptions import ValidationError
    from django.test import RequestFactory

    from kernel.api.errors import Invalid
    from kernel.api.plain import read_query
    from timeline.live.openapi import StreamQuery
    from timeline.live.views import _last_event_id

    assert _last_event_id("12:3") == (12, 3)
    assert _last_event_id("12") == (12, None)
    for bad in ("12:", ":3", "1:2:3", "a:1", "-1"):
        with pytest.raises(ValidationError):
            _last_event_id(bad)

    def query(text: str) -> StreamQuery:
        return read_query(RequestFactory().get("/stream" + text), StreamQuery)

    assert [query(f"?updates={value}").updates for value in ("1", "0", "")] == ["1", "0", None]
    assert query("?after_seq=7&epoch=e1&ticket=t") == StreamQuery(after_seq=7, updates=None, epoch="e1")
    assert query("?epoch=") == StreamQuery()
    for bad in ("?updates=yes", "?after_seq=1&after_seq=2", f"?after_seq={2**63}"):
        with pytest.raises(Invalid):
            query(bad)
