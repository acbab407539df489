"""A stream ticket is spent only once the stream opens: a refusal by the token's rate (429) or by
the stream slots (429 ``too_many_streams``) leaves it usable (docs/api.md, "Stream tickets")."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.process.live_support import EventReader, ServerProcess

pytestmark = [pytest.mark.process, pytest.mark.timeout(120)]


@pytest.fixture
def server(tmp_path, scratch_db):
    server = ServerProcess(
        tmp_path,
        database=scratch_db(migrated=True),
        env={"CHARTR_API_THROTTLE_RATE": "3/s", "CHARTR_MAX_STREAMS_PER_TOKEN": "1", "CHARTR_WORKERS": "1"},
    )
    server.token = server.setup(["agent-t"])["token"]
    server.start()
    yield server
    server.stop()


def mint(client: httpx.Client, server: ServerProcess) -> str:
    response = client.post(
        server.url("/api/v1/agents/agent-t/timeline/stream-tickets"),
        headers={"Authorization": f"Bearer {server.token}"},
    )
    assert response.status_code == 201, response.text
    return response.json()["ticket"]


def stream_url(server: ServerProcess, ticket: str) -> str:
    return server.url(f"/api/v1/agents/agent-t/timeline/stream?ticket={ticket}")


def test_a_ticket_refused_by_the_rate_is_not_spent(server):
    with httpx.Client() as client:
        for _ in range(5):
            # At the start of a one-second window: the mint, two reads and the stream fall in it.
            time.sleep(1 - time.time() % 1 + 0.02)
            ticket = mint(client, server)
            for _ in range(2):
                client.get(
                    server.url("/api/v1/agents/agent-t/timeline"), headers={"Authorization": f"Bearer {server.token}"}
                )
            refused = client.get(stream_url(server, ticket))
            if refused.status_code == 429:
                break
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "throttled"
        time.sleep(int(refused.headers["Retry-After"]) + 0.05)
        reader = EventReader(client, stream_url(server, ticket), token=None)
        try:
            assert reader.response.status_code == 200
            assert reader.next().event == "agent"
        finally:
            reader.close()
        time.sleep(1.1)
        # Spent now: it opens nothing more.
        assert client.get(stream_url(server, ticket)).json()["error"]["code"] == "stream_ticket_invalid"


def test_a_ticket_refused_for_want_of_a_slot_is_not_spent(server):
    with httpx.Client() as client, httpx.Client() as other:
        first = EventReader(client, stream_url(server, mint(client, server)), token=None)
        assert first.next().event == "agent"
        ticket = mint(client, server)
        time.sleep(1.1)
        refused = other.get(stream_url(server, ticket))
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_streams"
        first.close()
        time.sleep(0.5)
        second = EventReader(other, stream_url(server, ticket), token=None)
        try:
            assert second.response.status_code == 200
            assert second.next().event == "agent"
        finally:
            second.close()
