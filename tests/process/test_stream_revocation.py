"""Revoking a token ends its open streams, and those of the tickets it minted, on every instance
and every transport, within the documented bound (docs/timeline.md, "When a token is revoked")."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.process.live_support import REDIS_URL, EventReader, ServerProcess, redis_available
from tests.support.processes import start_together

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]

#: The documented bound is the safety-net poll (1 s) plus one read; this leaves room on a loaded machine.
BOUND_SECONDS = 5

SECOND_TOKEN = """
import json, sys
from tokens.services import create_api_token
print("RESULT " + json.dumps({"token": create_api_token(name="bystander")[1]}))
"""


@pytest.fixture(params=["default", "redis"])
def transport_env(request) -> dict:
    """The run's database's own transport (local on SQLite, LISTEN/NOTIFY on PostgreSQL), then Redis."""
    if request.param == "default":
        return {}
    if not redis_available():
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    return {"CHARTR_LIVE_TRANSPORT": "redis", "CHARTR_REDIS_URL": REDIS_URL}


@pytest.fixture
def instances(tmp_path, scratch_db, transport_env):
    database = scratch_db(migrated=True)
    pair = [ServerProcess(tmp_path, database=database, env=transport_env, name=f"i{n}") for n in (1, 2)]
    yield pair
    for server in pair:
        server.stop()


def open_stream(client, server, agent_id, *, token=None, ticket=None) -> EventReader:
    query = f"?ticket={ticket}" if ticket else ""
    reader = EventReader(client, server.url(f"/api/v1/agents/{agent_id}/timeline/stream{query}"), token=token)
    assert reader.response.status_code == 200, reader.response.read()
    assert reader.next().event == "agent"
    return reader


def ended_within(reader: EventReader, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    reader.stop_when = lambda: time.monotonic() > deadline
    try:
        while True:
            reader.next()
    except EOFError as exc:
        return "stopped" not in str(exc)


def test_revoking_a_token_ends_its_streams_and_its_tickets_streams_on_every_instance(instances):
    first, second = instances
    setup = first.setup(["agent-v"])
    token = setup["token"]
    bystander = first.run_python(SECOND_TOKEN, {})["token"]
    start_together(first, second)
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client() as client:
        ticket = client.post(second.url("/api/v1/agents/agent-v/timeline/stream-tickets"), headers=auth).json()
        doomed = [
            open_stream(client, first, "agent-v", token=token),
            open_stream(client, second, "agent-v", token=token),
            open_stream(client, first, "agent-v", ticket=ticket["ticket"]),
        ]
        kept = open_stream(client, second, "agent-v", token=bystander)
        try:
            first.manage("revoke_api_token", token)
            revoked_at = time.monotonic()
            for reader in doomed:
                assert ended_within(reader, BOUND_SECONDS - (time.monotonic() - revoked_at))
            # The other token's stream is open and still delivers.
            response = client.post(
                second.url("/api/v1/agents/agent-v/timeline"),
                json={"items": [{"item": {"type": "user_message", "text": "still here"}}]},
                headers={"Authorization": f"Bearer {bystander}"},
            )
            assert response.status_code == 201
            assert kept.next_of("committed", timeout=10).data["seq"] == 1
            # A reconnect is refused on both instances.
            for server in (first, second):
                answer = client.get(server.url("/api/v1/agents/agent-v/timeline/stream"), headers=auth)
                assert answer.status_code == 401
                assert answer.json()["error"]["code"] == "not_authenticated"
        finally:
            for reader in (*doomed, kept):
                reader.close()


EXPIRING_TOKEN = """
import datetime as dt, json, sys
from django.utils import timezone
from tokens.services import create_api_token
lifetime = json.loads(sys.argv[1])["lifetime"]
token = create_api_token(name="expiring", expires_at=timezone.now() + dt.timedelta(seconds=lifetime))[1]
print("RESULT " + json.dumps({"token": token}))
"""


def test_a_token_that_expires_ends_its_streams_and_its_tickets_streams_on_every_instance(instances):
    first, second = instances
    first.setup(["agent-x"])
    lifetime = 6.0
    token = first.run_python(EXPIRING_TOKEN, {"lifetime": lifetime})["token"]
    created = time.monotonic()
    start_together(first, second)
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client() as client:
        ticket = client.post(second.url("/api/v1/agents/agent-x/timeline/stream-tickets"), headers=auth).json()
        doomed = [
            open_stream(client, first, "agent-x", token=token),
            open_stream(client, second, "agent-x", ticket=ticket["ticket"]),
        ]
        try:
            assert time.monotonic() - created < lifetime, "the streams opened too late to test the expiry"
            for reader in doomed:
                assert ended_within(reader, lifetime + BOUND_SECONDS - (time.monotonic() - created))
            assert time.monotonic() - created >= lifetime - 1, "a stream ended before its token expired"
            for server in (first, second):
                answer = client.get(server.url("/api/v1/agents/agent-x/timeline"), headers=auth)
                assert answer.status_code == 401
        finally:
            for reader in doomed:
                reader.close()
