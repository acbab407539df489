"""CORS on the real server (gunicorn + uvicorn, chartr/asgi.py): the API's requests go through
Django's WSGI handler and the stream through its ASGI handler, and both answer a named origin's
preflight and requests (CHARTR_CORS_ORIGINS); a ticket opens the stream cross-origin, once.
A browser doing the same across a restart is tests/process/test_stream_ticket_browser.py."""

from __future__ import annotations

import httpx
import pytest

from tests.process.live_support import EventReader, ServerProcess

pytestmark = pytest.mark.process

ORIGIN = "http://app.example:8080"


@pytest.fixture
def server(tmp_path, scratch_db):
    server = ServerProcess(tmp_path, database=scratch_db(migrated=True), env={"CHARTR_CORS_ORIGINS": ORIGIN})
    token = server.setup(["cors-agent"])["token"]
    server.start()
    yield server, token
    server.stop()


def preflight(server, path: str, method: str, headers: str, origin: str = ORIGIN) -> httpx.Response:
    return httpx.options(
        server.url(path),
        headers={"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers},
        timeout=10,
    )


def test_a_named_origin_mints_a_ticket_and_opens_the_stream_once(server):
    server, token = server
    tickets = "/api/v1/agents/cors-agent/timeline/stream-tickets"
    stream = "/api/v1/agents/cors-agent/timeline/stream"
    answered = preflight(server, tickets, "POST", "authorization")
    assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == ORIGIN
    assert "authorization" in answered.headers["access-control-allow-headers"]
    assert "access-control-allow-credentials" not in answered.headers
    answered = preflight(server, stream, "GET", "last-event-id")
    assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == ORIGIN
    assert (
        "access-control-allow-origin"
        not in preflight(server, tickets, "POST", "authorization", "http://x.example").headers
    )

    minted = httpx.post(server.url(tickets), headers={"Authorization": f"Bearer {token}", "Origin": ORIGIN}, timeout=10)
    assert minted.status_code == 201 and minted.headers["access-control-allow-origin"] == ORIGIN
    url = server.url(minted.json()["stream_url"])
    with httpx.Client() as client:
        with client.stream("GET", url, headers={"Origin": ORIGIN}, timeout=httpx.Timeout(10, read=8)) as opened:
            assert opened.status_code == 200
            assert opened.headers["access-control-allow-origin"] == ORIGIN
            assert opened.headers["content-type"].startswith("text/event-stream")
            assert any(line == "event: agent" for line in opened.iter_lines())
        again = client.get(url, headers={"Origin": ORIGIN}, timeout=10)
        assert again.status_code == 401 and again.json()["error"]["code"] == "stream_ticket_invalid"
        assert again.headers["access-control-allow-origin"] == ORIGIN
        # the token works as before, header and all
        reader = EventReader(client, server.url(stream), token=token)
        try:
            assert reader.response.status_code == 200 and reader.next().event == "agent"
        finally:
            reader.close()
