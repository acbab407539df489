"""What pooled clients, proxies and careless clients do to one real server process:
reuse a connection for a stream, pipeline requests (bodies nobody may send: tests/process/test_front.py)."""

from __future__ import annotations

import socket
import sqlite3
import time

import httpx
import pytest

from tests.support.processes import isolated_env, manage, start_server

pytestmark = pytest.mark.process

AGENT = "keepalive-agent"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("edges")
    tmp = root / "tmp"
    tmp.mkdir()
    env = isolated_env(root, CHARTR_WORKERS="1", TMPDIR=str(tmp))
    server = start_server(env, root / "server.log")
    try:
        token = manage("create_api_token", "edges", env=env).stdout.split()[-1]
        assert token.startswith("chartr_"), token
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=10) as client:
            project = client.post("/api/v1/projects", json={"directory": "/srv/edges", "kind": "git"}).json()
            workspace = client.post(
                "/api/v1/workspaces", json={"project_id": project["id"], "directory": "/srv/edges", "kind": "checkout"}
            ).json()
            created = client.post(
                "/api/v1/agents", json={"agent_id": AGENT, "workspace_id": workspace["id"], "provider": "test"}
            )
            assert created.status_code == 201, created.text
        server.token = token
        server.tmp = tmp
        yield server
    finally:
        server.stop()


def test_a_stream_after_a_rest_call_on_one_pooled_connection_always_opens(server):
    statuses: list[int] = []
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    headers = {"Authorization": f"Bearer {server.token}"}
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=10, limits=limits) as client:
        for _ in range(300):
            assert client.get(f"/api/v1/agents/{AGENT}").status_code == 200
            with client.stream("GET", f"/api/v1/agents/{AGENT}/timeline/stream") as stream:
                statuses.append(stream.status_code)
                if stream.status_code == 200:
                    assert stream.headers["content-type"].startswith("text/event-stream")
                else:
                    assert stream.headers["content-type"] == "application/json", stream.read()
    assert statuses == [200] * 300, {code: statuses.count(code) for code in set(statuses)}
    assert "CurrentThreadExecutor" not in server.process.output


def _request(path: str, token: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode()


def _read_until(sock: socket.socket, buffer: bytes, needle: bytes, deadline: float) -> bytes:
    while needle not in buffer:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before {needle!r}: {buffer[-500:]!r}")
        buffer += chunk
    return buffer


def test_a_pipelined_rest_call_and_stream_both_answer_200(server):
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(
                _request(f"/api/v1/agents/{AGENT}", server.token)
                + _request(f"/api/v1/agents/{AGENT}/timeline/stream", server.token)
            )
            deadline = time.monotonic() + 10
            buffer = _read_until(sock, b"", b"\r\n\r\n", deadline)
            head, _, rest = buffer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = int(
                next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
            )
            while len(rest) < length:
                rest += sock.recv(65536)
            second = _read_until(sock, rest[length:], b"\r\n\r\n", deadline)
            assert second.startswith(b"HTTP/1.1 200"), second[:300]
            assert b"text/event-stream" in second.partition(b"\r\n\r\n")[0].lower()


def test_a_body_within_the_limit_still_reaches_the_api(server):
    response = httpx.post(
        f"{server.base_url}/api/v1/projects",
        json={"directory": "/srv/" + "d" * 200, "kind": "git"},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


@pytest.mark.own_databases
def test_a_write_that_cannot_get_the_sqlite_lock_in_time_is_a_503_busy(tmp_path, scratch_db):
    # A migrated copy where the entrypoint looks (<data dir>/chartr.sqlite3): its migrate has nothing to do.
    scratch_db("sqlite", migrated=True)
    env = isolated_env(tmp_path, CHARTR_WORKERS="1", CHARTR_SQLITE_TIMEOUT="1")
    server = start_server(env, tmp_path / "server.log")
    try:
        token = manage("create_api_token", "busy", env=env).stdout.split()[-1]
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
            holder = sqlite3.connect(tmp_path / "data" / "chartr.sqlite3", isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            try:
                refused = client.post("/api/v1/projects", json={"directory": "/srv/busy", "kind": "git"})
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert refused.status_code == 503, refused.text
            assert refused.headers["Retry-After"] == "1"
            assert refused.json()["error"]["code"] == "busy"
            retried = client.post("/api/v1/projects", json={"directory": "/srv/busy", "kind": "git"})
            assert retried.status_code == 201, retried.text
    finally:
        server.stop()
    assert "Traceback" not in server.process.output
