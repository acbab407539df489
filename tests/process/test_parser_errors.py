"""What the HTTP layer answers under /api/ for requests that are not well-formed HTTP, through a real server.

A request uvicorn's parser (httptools) can read reaches chartr, and every
refusal comes in the JSON error envelope, whatever its method: ``PROPFIND``,
``PURGE``, ``TRACE``. A request the parser cannot read at all (a method
llhttp does not know, such as ``FOO`` or a lower-case ``get``; an unknown HTTP
version, a control character in the target, a broken header) is answered by uvicorn itself before any application code runs, with
its own plain-text 400: no ASGI app sees those bytes, and no public uvicorn or
gunicorn setting hands them to one. docs/api.md ("Errors") lists them.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.processes import isolated_env, manage, start_server

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("parser")
    env = isolated_env(root, CHARTR_WORKERS="1")
    server = start_server(env, root / "server.log")
    try:
        server.token = manage("create_api_token", "parser", env=env).stdout.split()[-1]
        yield server
    finally:
        server.stop()


def exchange(server, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    host, port = server.base_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def request(server, method: str, path: str = "/api/v1/projects") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token}\r\n"
        "Content-Length: 0\r\nConnection: close\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("method", ["PROPFIND", "PURGE", "LINK", "MKCOL", "SEARCH", "TRACE", "CONNECT"])
def test_every_method_the_parser_reads_gets_the_envelope(server, method):
    status, headers, body = exchange(server, request(server, method))
    assert 400 <= status < 500, (status, body)
    assert headers["content-type"].startswith("application/json"), (status, headers, body)
    error = json.loads(body)["error"]
    assert error["code"] and error["message"]


@pytest.mark.parametrize(
    "raw",
    [
        b"FOO /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /api/v1/projects HTTP/9.9\r\nHost: x\r\n\r\n",
        b"get /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /api/v1/\x01 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /api/v1/projects HTTP/1.1\r\nBad Header: x\r\n\r\n",
    ],
)
def test_what_the_parser_cannot_read_is_its_plain_400_and_never_reaches_chartr(server, raw):
    before = server.output.count("Not Found") + server.output.count("not_authenticated")
    status, headers, body = exchange(server, raw)
    assert status == 400 and headers["content-type"].startswith("text/plain"), (status, headers, body)
    assert body == b"Invalid HTTP request received."
    assert server.output.count("Not Found") + server.output.count("not_authenticated") == before
