"""What chartr answers itself when a client reaches it directly, and the same requests through
the shipped nginx configuration (docs/api.md#errors, docs/deploy.md#limits): an HTTP/1.1 request
without ``Host``, a chunked body, a ``%2F`` in a path, and bodies nobody is allowed to send."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import skip_or_fail
from tests.process.live_support import ServerProcess
from tests.process.test_stream_threads import worker_pid
from tests.support.balancer import Nginx, nginx_binary
from tests.support.processes import ScratchDatabase, run_engine

pytestmark = [pytest.mark.process, pytest.mark.timeout(300)]

AGENT = "front-agent"


@pytest.fixture(scope="module")
def server(tmp_path_factory, migrated_templates):
    engine = run_engine()
    root = tmp_path_factory.mktemp("front")
    database = ScratchDatabase(engine, root, purpose="front", template=migrated_templates.get(engine)).create()
    server = ServerProcess(root, database=database, env={"DATABASE_URL": database.url})
    server.token = server.setup([AGENT])["token"]
    try:
        with server:
            server.worker = worker_pid(server.process.pid)
            yield server
    finally:
        database.drop()


@pytest.fixture(scope="module")
def front(tmp_path_factory, server):
    if nginx_binary() is None:
        skip_or_fail("nginx is not installed (Debian: nginx-light)")
    with Nginx(tmp_path_factory.mktemp("front-nginx"), [server.port]) as nginx:
        yield nginx


def exchange(port: int, raw: bytes, timeout: float = 10) -> tuple[int, dict, bytes]:
    """``raw`` sent on a connection of its own; the answer's status, headers and body, read until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass  # nginx resets a connection it refused once its answer is out
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def error_code(body: bytes) -> str:
    return json.loads(body)["error"]["code"]


@pytest.mark.parametrize("path", ["/api/v1/projects", "/healthz", "/admin/"])
def test_an_http_1_1_request_without_host_gets_400_directly_and_through_the_proxy(server, front, path):
    raw = f"GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n".encode()
    status, headers, body = exchange(server.port, raw)
    assert status == 400 and headers["connection"] == "close"
    if path.startswith("/api/"):
        assert error_code(body) == "invalid"
    else:
        assert b"Host" in body
    status, _, body = exchange(front.port, raw)
    assert (status, error_code(body)) == (400, "invalid")
    # HTTP/1.0 has no Host to require: chartr answers it (here, the probe's 200).
    assert exchange(server.port, b"GET /healthz HTTP/1.0\r\n\r\n")[0] == 200


MALFORMED = [
    (b"GET / FOO\r\n\r\n", 400, "invalid"),
    (b"\x01\x02 garbage\r\n\r\n", 400, "invalid"),
    (b"GET /api/v1/projects HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, "invalid"),
    (b"GET /api/v1/projects HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "invalid"),
    (b"POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "invalid"),
    (
        b"POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "invalid",
    ),
    (
        b"POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        501,
        "not_implemented",
    ),
    (b"GET /api/v1/projects HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
    (b"POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n", 413, "payload_too_large"),
]


@pytest.mark.parametrize(
    ("raw", "status", "code"), MALFORMED, ids=[raw[:40].decode("latin-1") for raw, _, _ in MALFORMED]
)
def test_a_malformed_head_is_refused_by_the_proxy_in_the_envelope(front, raw, status, code):
    answered, headers, body = exchange(front.port, raw)
    assert (answered, headers["content-type"], error_code(body)) == (status, "application/json", code)


def test_a_percent_encoded_slash_is_a_slash_before_routing(server, front):
    auth = {"Authorization": f"Bearer {server.token}"}
    for base in (server.base_url, front.base_url):
        # agents/<agent_id>/timeline: "front-agent%2Ftimeline" is the agent's timeline, not an agent of that id.
        assert httpx.get(f"{base}/api/v1/agents/{AGENT}%2Ftimeline", headers=auth).status_code == 200
        for path in ("/api/v1/agents/a%2Fb/timeline", "/api/v1/agents/a%2Fb/timeline/stream", "/api/v1/agents/a%2fb"):
            response = httpx.get(base + path, headers=auth)
            assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found"), (base, path)


def test_a_chunked_body_gets_411_directly_and_reaches_the_api_through_the_proxy(server, front):
    def chunks():
        yield json.dumps({"directory": "/srv/front-chunked", "kind": "git"}).encode()

    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    direct = httpx.post(f"{server.base_url}/api/v1/projects", content=chunks(), headers=headers)
    assert (direct.status_code, direct.json()["error"]["code"]) == (411, "length_required")
    proxied = httpx.post(f"{front.base_url}/api/v1/projects", content=chunks(), headers=headers)
    assert proxied.status_code == 201, proxied.text
    assert proxied.json()["directory"] == "/srv/front-chunked"


def post_unread(port: int, token: str | None, length: int, sent: int) -> tuple[int, float]:
    """A POST declaring ``length`` bytes and sending ``sent`` of them: its status and how long the answer took."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
    )
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(head.encode())
        try:
            sock.sendall(b"x" * sent)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close as soon as it has answered
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return int(data.split(b" ", 2)[1]), time.monotonic() - started


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS line for {pid}")


def test_no_body_is_read_before_the_token_is_checked(server):
    """150 unauthenticated 2.5 MiB bodies, 10 at a time, straight to chartr: each gets 401, the worker keeps its size."""
    body = 5 * 1024 * 1024 // 2
    before = rss_kib(server.worker)
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: post_unread(server.port, None, body, body), range(150)))
    grown = rss_kib(server.worker) - before
    assert {status for status, _ in answers} == {401}
    assert grown < 32 * 1024, f"the worker grew by {grown} KiB"


def test_a_declared_length_over_the_limit_is_refused_after_the_token_before_a_byte_is_read(server):
    """300 MiB declared, 8 MiB sent: 401 without a token, 413 with one, at once either way."""
    declared = 300 * 1024 * 1024
    status, elapsed = post_unread(server.port, None, declared, 8 * 1024 * 1024)
    assert status == 401 and elapsed < 5, elapsed
    status, elapsed = post_unread(server.port, server.token, declared, 8 * 1024 * 1024)
    assert status == 413 and elapsed < 5, elapsed
