"""What a real server writes to its log when clients misbehave (kernel/logs.py).

- A token in a query string is refused, and no log line carries it: not the
  access log's request line, not Django's "Not Found" lines, not chartr's.
- A request with a ``Host`` outside ALLOWED_HOSTS gets a 400 and one log line
  naming the host (escaped), not a traceback.
- A start and a stop write only what they did: no "lifespan unsupported" line,
  no socket error or traceback as the worker closes its listener.

One server, started by the entrypoint with gunicorn.conf.py, as deployed.
"""

from __future__ import annotations

import secrets
import socket

import httpx
import pytest

from tests.support.processes import Server, isolated_env, manage, run_engine, wait_for

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def server(tmp_path_factory, migrated_templates):
    root = tmp_path_factory.mktemp("server-logs")
    database = migrated_templates.clone(run_engine(), root, purpose="logs").create()
    try:
        env = isolated_env(root, CHARTR_WORKERS="1", **database.env())
        with Server(env, root / "server.log") as server:
            created = manage("create_api_token", "logs", env=env, check=True)
            server.token = created.stdout.split()[-1]
            assert server.token.startswith("chartr_"), created.stdout
            yield server
    finally:
        database.drop()


def access_lines(server: Server, marker: str) -> list[str]:
    return [line for line in server.output.splitlines() if marker in line and '" 4' in line]


def escaped(text: str) -> str:
    """``text`` with every character percent-encoded."""
    return "".join(f"%{ord(c):02X}" for c in text)


def test_tokens_in_a_query_string_are_refused_and_redacted_from_every_log_line(server):
    secret = {name: f"{name}-{secrets.token_hex(12)}" for name in ("access_token", "api_key", "auth", "sig")}
    marker = secrets.token_hex(6)
    bearer = {"Authorization": f"Bearer {server.token}"}
    requests = [
        # No credentials but the query: 401, the token in it is never looked at.
        (f"/api/v1/projects?m={marker}&token={server.token}", {}, 401),
        # A valid token in the header: the query's credentials are unknown parameters, 400.
        (f"/api/v1/projects?m={marker}&access_token={secret['access_token']}", bearer, 400),
        (f"/api/v1/projects?m={marker}&API_KEY={secret['api_key']}&auth={secret['auth']}", bearer, 400),
        (f"/api/v1/agents/a/timeline/stream?m={marker}&token={server.token}", {}, 401),
        # An escaped "?" makes the query part of the path, which Django's "Not Found" line writes out.
        (f"/api/v1/m{marker}%3Ftoken%3D{server.token}", bearer, 404),
        (f"/no-such-page/{marker}?signature={secret['sig']}", {}, 404),
        # Percent-encoded, the server reads the same token: the log must not keep it either.
        (f"/api/v1/projects?m={marker}&%74oken={server.token}", {}, 401),
        (f"/api/v1/m{marker}/{escaped(server.token)}", bearer, 404),
        (f"/api/v1/projects?m={marker}&q={escaped(server.token)}", bearer, 400),
    ]
    for path, headers, status in requests:
        response = httpx.get(server.url(path), headers=headers, timeout=10)
        assert response.status_code == status, (path, response.text)
        assert response.status_code != 200

    wait_for(lambda: len(access_lines(server, marker)) >= len(requests), timeout=10, what="the access log lines")
    log = server.output
    for leaked in (server.token, server.token[len("chartr_") :], escaped(server.token)[30:], *secret.values()):
        assert leaked not in log
    assert "token=[redacted]" in log and "access_token=[redacted]" in log and "API_KEY=[redacted]" in log
    assert "auth=[redacted]" in log and "signature=[redacted]" in log and "%74oken=[redacted]" in log
    assert f"Not Found: /api/v1/m{marker}?token=[redacted]" in log
    # The redaction keeps everything else of a line.
    assert any(f"GET /api/v1/projects?m={marker}&token=[redacted] HTTP/1.1" in line for line in log.splitlines())


def test_a_bad_host_is_a_400_and_one_log_line_without_a_traceback(server):
    start = len(server.output)
    api = httpx.get(server.url("/api/v1/projects"), headers={"Host": "evil-api.example"}, timeout=10)
    assert api.status_code == 400
    assert api.json() == {"error": {"code": "invalid", "message": api.json()["error"]["message"]}}
    assert "Host" in api.json()["error"]["message"]
    admin = httpx.get(server.url("/admin/"), headers={"Host": "evil-admin.example"}, timeout=10)
    assert admin.status_code == 400 and admin.headers["content-type"].startswith("text/html")
    # A byte the HTTP parser lets through but a log reader may take for a line break (NEL) is written escaped.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /api/v1/projects HTTP/1.1\r\nHost: evil-nel\x85.example\r\nConnection: close\r\n\r\n")
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    assert raw.startswith(b"HTTP/1.1 400")

    def log() -> str:
        return server.output[start:]

    wait_for(lambda: log().count('HTTP/1.1" 400') >= 3, timeout=10, what="the access log lines")
    log = log()
    assert "Traceback" not in log
    for host in ("evil-api.example", "evil-admin.example", "evil-nel\\x85.example"):
        lines = [line for line in log.split("\n") if host in line]
        assert len(lines) == 1, lines
        assert "Invalid HTTP_HOST header" in lines[0]
    assert "\x85" not in log


def test_each_response_is_one_access_log_line(server):
    marker = secrets.token_hex(6)
    assert httpx.get(server.url(f"/api/v1/projects?m={marker}"), timeout=10).status_code == 401
    assert httpx.get(server.url(f"/healthz?m={marker}"), timeout=10).status_code == 200

    def lines() -> list[str]:
        return [line for line in server.output.splitlines() if marker in line]

    wait_for(lambda: len(lines()) >= 2, timeout=10, what="the access log lines")
    assert [line.split(" - ", 1)[1] for line in lines()] == [
        f'"GET /api/v1/projects?m={marker} HTTP/1.1" 401',
        f'"GET /healthz?m={marker} HTTP/1.1" 200',
    ]


def test_a_start_and_a_stop_write_no_noise(tmp_path, migrated_templates):
    database = migrated_templates.clone(run_engine(), tmp_path, purpose="quiet").create()
    try:
        env = isolated_env(tmp_path, CHARTR_WORKERS="1", **database.env())
        server = Server(env, tmp_path / "server.log").start()
        try:
            with httpx.Client() as client:  # a kept-alive connection is open as the server stops
                assert client.get(server.url("/healthz"), timeout=10).status_code == 200
                assert server.stop() == 0
        finally:
            server.stop()
    finally:
        database.drop()
    log = server.output
    assert "Started server process" in log and "Finished server process" in log
    for noise in ("lifespan", "Error while closing socket", "Bad file descriptor", "Traceback", "ERROR"):
        assert noise not in log, f"{noise!r} in the log:\n{log}"
