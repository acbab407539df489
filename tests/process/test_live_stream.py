"""The live stream across real process boundaries: gunicorn + uvicorn workers, real sockets, SIGKILL.

The reconnect, durability and archive tests run on this run's database flavour
(SQLite, or a fresh PostgreSQL database when DATABASE_URL points at
PostgreSQL). The cross-process tests run each transport that is reachable:
PostgreSQL LISTEN/NOTIFY, and Redis pub/sub over a shared SQLite file.
"""

from __future__ import annotations

import random
import threading
import time

import httpx
import pytest

from tests.conftest import skip_or_fail
from tests.process.live_support import (
    REDIS_URL,
    EventReader,
    ServerProcess,
    append,
    redis_available,
)
from tests.support.processes import start_together

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]


@pytest.fixture
def run_database(scratch_db):
    """A migrated copy of a template on this run's database (SQLite in the data dir, or PostgreSQL)."""
    return scratch_db(migrated=True)


@pytest.fixture
def postgres_database(scratch_db):
    return scratch_db("postgresql", migrated=True)


@pytest.fixture
def servers(tmp_path, scratch_db):
    # scratch_db first: its databases are dropped after these servers stop.
    started: list[ServerProcess] = []

    def make(name: str = "srv", **kwargs) -> ServerProcess:
        server = ServerProcess(tmp_path, name=name, **kwargs)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def stream_url(server: ServerProcess, agent_id: str, query: str = "") -> str:
    return server.url(f"/api/v1/agents/{agent_id}/timeline/stream{query}")


def test_reconnect_with_last_event_id_receives_every_seq_exactly_once(servers, run_database):
    server = servers(database=run_database)
    setup = server.setup(["agent-r"])
    token = setup["token"]
    server.start()
    total = 60
    append_errors: list[str] = []

    def appender():
        with httpx.Client() as client:
            rng = random.Random(1)
            for index in range(total):
                response = append(
                    client,
                    server,
                    token,
                    "agent-r",
                    [{"item": {"type": "user_message", "text": f"m{index}"}, "item_id": f"i{index}"}],
                )
                if response.status_code != 201:
                    append_errors.append(response.text)
                    return
                time.sleep(rng.uniform(0, 0.03))

    received: list[int] = []
    texts: list[str] = []
    last_event_id: str | None = None
    connections = 0
    rng = random.Random(2)
    thread = threading.Thread(target=appender, daemon=True)
    deadline = time.monotonic() + 40
    with httpx.Client() as client:
        thread.start()
        while len(received) < total and time.monotonic() < deadline:
            query = "?after_seq=0" if last_event_id is None else ""
            reader = EventReader(client, stream_url(server, "agent-r", query), token=token, last_event_id=last_event_id)
            connections += 1
            assert reader.response.status_code == 200
            assert reader.response.headers["content-type"].startswith("text/event-stream")
            # Drop the connection after a random number of events (sometimes before any row).
            budget = rng.randint(1, 9)
            try:
                for _ in range(budget):
                    event = reader.next()
                    if event.event == "committed":
                        assert event.id == str(event.data["seq"])
                        received.append(event.data["seq"])
                        texts.append(event.data["item"]["text"])
                        last_event_id = event.id
                    if len(received) >= total:
                        break
            finally:
                reader.close()
    thread.join(timeout=20)
    assert not append_errors
    assert received == list(range(1, total + 1))
    assert texts == [f"m{index}" for index in range(total)]
    assert connections >= 8


def test_stream_sends_keepalive_and_live_rows_without_reconnecting(servers, run_database):
    server = servers(database=run_database)
    token = server.setup(["agent-k"])["token"]
    server.start()
    with httpx.Client() as client:
        reader = EventReader(client, stream_url(server, "agent-k"), token=token)
        try:
            snapshot = reader.next()
            assert snapshot.event == "agent" and snapshot.data["reason"] == "snapshot"
            assert snapshot.data["head_seq"] == 0
            # CHARTR_SSE_KEEPALIVE_SECONDS=1 in the server: an idle stream gets comments...
            started = time.monotonic()
            assert reader.next_comment() == ": keep-alive"
            assert reader.next_comment() == ": keep-alive"
            assert time.monotonic() - started < 8
            # ...and a row appended later still comes on the same connection.
            assert append(
                client, server, token, "agent-k", [{"item": {"type": "user_message", "text": "x"}}]
            ).is_success
            event = reader.next_of("committed")
            assert event.data["seq"] == 1 and event.data["item_type"] == "user_message"
        finally:
            reader.close()


def _cross_process_roundtrip(first: ServerProcess, second: ServerProcess, token: str) -> None:
    """A subscriber on ``second`` hears what is sent through ``first``."""
    with httpx.Client() as client:
        reader = EventReader(client, stream_url(second, "agent-x", "?after_seq=0"), token=token)
        try:
            assert reader.next().event == "agent"
            headers = {"Authorization": f"Bearer {token}"}
            small = {"type": "assistant_message", "text": "thinking..."}
            response = client.post(
                first.url("/api/v1/agents/agent-x/timeline/provisional"),
                json={"item": small, "item_id": "answer-1"},
                headers=headers,
            )
            assert response.status_code == 202, response.text
            started = time.monotonic()
            event = reader.next_of("provisional", timeout=10)
            assert event.data == {"item": small, "item_id": "answer-1"}
            assert event.id is None

            # Bigger than one NOTIFY payload: travels in chunks on PostgreSQL.
            big = {"type": "assistant_message", "text": "é" * 30_000}
            response = client.post(
                first.url("/api/v1/agents/agent-x/timeline/provisional"), json={"item": big}, headers=headers
            )
            assert response.status_code == 202
            assert reader.next_of("provisional", timeout=10).data == {"item": big, "item_id": None}

            response = append(client, first, token, "agent-x", [{"item": small, "item_id": "answer-1"}])
            assert response.status_code == 201
            event = reader.next_of("committed", timeout=10)
            assert event.data["seq"] == 1 and event.data["item_id"] == "answer-1"
            # The servers poll only every 30 s: this came by notification.
            assert time.monotonic() - started < 10
        finally:
            reader.close()


@pytest.mark.own_databases
def test_cross_process_over_postgres_listen_notify(servers, postgres_database):
    env = {"CHARTR_LIVE_POLL_SECONDS": "30"}
    first = servers("a", database=postgres_database, env=env)
    second = servers("b", database=postgres_database, env=env)
    token = first.setup(["agent-x"])["token"]
    start_together(first, second)
    _cross_process_roundtrip(first, second, token)


@pytest.mark.own_databases
def test_cross_process_over_redis_with_shared_sqlite(servers, scratch_db, tmp_path):
    if not redis_available():
        skip_or_fail(f"Redis is not reachable at {REDIS_URL}")
    database = scratch_db("sqlite", migrated=True, path=tmp_path / "shared.sqlite3")
    env = {"CHARTR_LIVE_POLL_SECONDS": "30", "CHARTR_REDIS_URL": REDIS_URL}
    first = servers("a", database=database, env=env)
    second = servers("b", database=database, env=env)
    token = first.setup(["agent-x"])["token"]
    start_together(first, second)
    _cross_process_roundtrip(first, second, token)


@pytest.mark.own_databases
def test_rows_appended_elsewhere_arrive_through_the_poll_without_any_transport(servers, scratch_db, tmp_path):
    """Two processes on one SQLite file and no Redis: no notification crosses, the poll delivers."""
    database = scratch_db("sqlite", migrated=True, path=tmp_path / "shared.sqlite3")
    env = {"CHARTR_LIVE_POLL_SECONDS": "0.5", "CHARTR_LIVE_TRANSPORT": "local"}
    first = servers("a", database=database, env=env)
    second = servers("b", database=database, env=env)
    token = first.setup(["agent-x"])["token"]
    start_together(first, second)
    with httpx.Client() as client:
        reader = EventReader(client, stream_url(second, "agent-x"), token=token)
        try:
            assert reader.next().event == "agent"
            for index in range(3):
                assert append(
                    client, first, token, "agent-x", [{"item": {"type": "todo", "items": [index]}}]
                ).is_success
            assert [reader.next_of("committed", timeout=10).data["seq"] for _ in range(3)] == [1, 2, 3]
        finally:
            reader.close()


def test_sigkill_during_appends_loses_no_acknowledged_row(servers, run_database):
    server = servers(database=run_database)
    token = server.setup(["agent-d"])["token"]
    server.start()
    acknowledged: dict[str, int] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def appender(worker: int):
        with httpx.Client() as client:
            index = 0
            while not stop.is_set():
                batch = [
                    {"item": {"type": "user_message", "text": "x"}, "item_id": f"w{worker}-{index + k}"}
                    for k in range(1 + index % 3)
                ]
                index += len(batch)
                try:
                    response = append(client, server, token, "agent-d", batch)
                except httpx.HTTPError:
                    return  # the server died mid-request: this batch was never acknowledged
                if response.is_success:
                    with lock:
                        for row in response.json()["rows"]:
                            acknowledged[row["item_id"]] = row["seq"]

    threads = [threading.Thread(target=appender, args=(w,), daemon=True) for w in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while len(acknowledged) < 150 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    stop.set()
    for thread in threads:
        thread.join(timeout=20)
    assert len(acknowledged) >= 150

    server.restart()
    stored: dict[str, int] = {}
    with httpx.Client() as client:
        after, has_newer = 0, True
        while has_newer:
            page = client.get(
                server.url("/api/v1/agents/agent-d/timeline"),
                params={"direction": "after", "seq": after, "limit": 1000},
                headers={"Authorization": f"Bearer {token}"},
            ).json()
            for row in page["rows"]:
                stored[row["item_id"]] = row["seq"]
            if not page["rows"]:
                break
            after, has_newer = page["rows"][-1]["seq"], page["has_newer"]
    for item_id, seq in acknowledged.items():
        assert stored.get(item_id) == seq, f"acknowledged {item_id} at seq {seq} is missing after SIGKILL"
    assert sorted(stored.values()) == list(range(1, len(stored) + 1))


ARCHIVE_SCRIPT = """
import json, sys
from registry.models import Workspace
from registry.services import archive_workspace
from snapshots.models import AgentSnapshot
agent = AgentSnapshot.objects.get(pk=json.loads(sys.argv[-1])["agent"])
archive_workspace(workspace=Workspace.objects.get(pk=agent.workspace_id))
print("RESULT " + json.dumps({"ok": True}))
"""


def test_archiving_the_workspace_sends_an_agent_event_with_archived_at(servers, run_database):
    server = servers(database=run_database)
    token = server.setup(["agent-a"])["token"]
    server.start()
    with httpx.Client() as client:
        reader = EventReader(client, stream_url(server, "agent-a"), token=token)
        try:
            snapshot = reader.next()
            assert snapshot.event == "agent" and snapshot.data["archived_at"] is None
            # Archived by another process (a management shell): over NOTIFY on
            # PostgreSQL, by the one-second poll on SQLite.
            server.run_python(ARCHIVE_SCRIPT, {"agent": "agent-a"})
            event = reader.next_of("agent", timeout=15)
            assert event.data["archived_at"] is not None
            assert event.data["lifecycle"] == "closed"
            assert event.data["reason"] in ("archived", "changed")
        finally:
            reader.close()
        response = client.post(
            server.url("/api/v1/agents/agent-a/timeline/provisional"),
            json={"item": {"type": "user_message", "text": "late"}},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "archived"
