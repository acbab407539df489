"""A database that refuses or loses the connection gets 503 ``database_unavailable`` with
``Retry-After`` in the envelope, never a 500 (docs/api.md, docs/operations.md): PostgreSQL at its
role's connection limit. (SQLite's equivalent, a writer waiting past the busy timeout, is 503
``busy``: tests/process/test_connection_edges.py.)"""

from __future__ import annotations

import secrets
import threading

import httpx
import pytest

from tests.process.live_support import ServerProcess
from tests.support.processes import LISTENING, postgres_admin, wait_for, with_dbname

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]


def assert_refusal(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "database_unavailable"
    assert int(response.headers["Retry-After"]) >= 1


def launch_unready(server: ServerProcess) -> None:
    """Start ``server`` without waiting for /readyz (which is meant to say 503 here)."""
    server.launch()
    server.port = int(wait_for(lambda: LISTENING.search(server.process.output), timeout=45, what="listening")[1])


@pytest.fixture
def limited_role(scratch_db):
    """A migrated PostgreSQL database and a role that may hold 4 connections to it."""
    database = scratch_db("postgresql", migrated=True)
    role, password = f"chartr_limited_{secrets.token_hex(3)}", secrets.token_hex(8)
    postgres_admin(
        f"CREATE ROLE {role} LOGIN PASSWORD '{password}' CONNECTION LIMIT 4",
        f'GRANT ALL ON DATABASE "{database.name}" TO {role}',
        admin_url=database.admin_url,
    )
    postgres_admin(
        f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}",
        admin_url=with_dbname(database.admin_url, database.name),
    )
    host = database.url.split("@", 1)[1]
    yield database, f"postgres://{role}:{password}@{host}"
    database.drop()
    postgres_admin(f"DROP ROLE IF EXISTS {role}", admin_url=database.admin_url)


def test_postgresql_at_its_connection_limit_answers_503_with_retry_after(tmp_path, limited_role):
    database, url = limited_role
    server = ServerProcess(tmp_path, database=database, env={"DATABASE_URL": url, "CHARTR_WORKERS": "2"})
    token = server.setup(["agent-l"])["token"]
    launch_unready(server)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        with httpx.Client(timeout=30) as http:
            for n in range(10):
                response = http.post(
                    server.url("/api/v1/agents/agent-l/timeline"),
                    json={"items": [{"item": {"type": "user_message", "text": f"{index}-{n}"}}]},
                    headers={"Authorization": f"Bearer {token}"},
                )
                with lock:
                    answers.append(response)

    try:
        threads = [threading.Thread(target=client, args=(index,)) for index in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        statuses = sorted({response.status_code for response in answers})
        assert set(statuses) <= {201, 503}, statuses
        refused = [response for response in answers if response.status_code == 503]
        assert refused, "the limit was never reached: the test proves nothing"
        for response in refused:
            assert_refusal(response)
        stored = database.query("SELECT count(*) FROM timeline_timelinerow")[0][0]
        assert stored == sum(response.status_code == 201 for response in answers)
    finally:
        server.stop()


def test_while_postgresql_refuses_every_connection_the_api_and_readyz_say_so_then_recover(tmp_path, limited_role):
    database, url = limited_role
    role = url.split("//", 1)[1].split(":", 1)[0]
    server = ServerProcess(tmp_path, database=database, env={"DATABASE_URL": url, "CHARTR_WORKERS": "1"})
    token = server.setup(["agent-g"])["token"]
    launch_unready(server)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=30) as client:
            wait_for(lambda: server.get("/readyz").status_code == 200, timeout=30, what="/readyz")
            assert client.get(server.url("/api/v1/projects"), headers=auth).status_code == 200
            # The server goes away for this role: its sessions end and no new one is let in.
            postgres_admin(
                f"ALTER ROLE {role} CONNECTION LIMIT 0",
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'",
                admin_url=database.admin_url,
            )
            try:
                for path in ("/api/v1/projects", "/api/v1/agents/agent-g/timeline"):
                    assert_refusal(client.get(server.url(path), headers=auth))
                appended = client.post(
                    server.url("/api/v1/agents/agent-g/timeline"),
                    json={"items": [{"item": {"type": "user_message", "text": "x"}}]},
                    headers=auth,
                )
                assert_refusal(appended)
                ready = server.get("/readyz")
                assert (ready.status_code, ready.json()["reason"]) == (503, "database_unreachable")
            finally:
                postgres_admin(f"ALTER ROLE {role} CONNECTION LIMIT 4", admin_url=database.admin_url)
            wait_for(lambda: server.get("/readyz").status_code == 200, timeout=30, what="/readyz again")
            assert client.get(server.url("/api/v1/projects"), headers=auth).status_code == 200
    finally:
        server.stop()
