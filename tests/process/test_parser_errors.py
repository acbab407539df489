"""What a real server answers to request heads that are not well-formed HTTP/1.x, and to odd but valid ones.

chartr/connection_limits.py holds each head to RFC 9112's grammar
(chartr/http_grammar.py) before uvicorn's parser (llhttp) sees it, so every
malformed head, under /api/ or not, gets the JSON envelope (400 ``invalid``,
501 ``not_implemented``, 505 ``http_version_not_supported``) and never
uvicorn's plain-text 400; and a valid head, however odd, still reaches chartr.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.processes import isolated_env, manage, start_server

pytestmark = pytest.mark.process

CHUNKED = b"POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

#: (name, raw bytes, status, code): each is refused before any application code runs.
MALFORMED = [
    ("unknown method", b"FOO /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 501, "not_implemented"),
    ("lower-case method", b"get /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 501, "not_implemented"),
    ("connect with a path", b"CONNECT /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 501, "not_implemented"),
    ("connect", b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("method not a token", b"GE(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("method with NUL", b"GE\x00T /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("leading space", b" GET /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("two spaces", b"GET  /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("trailing space", b"GET /api/v1/projects HTTP/1.1 \r\nHost: x\r\n\r\n", 400, "invalid"),
    ("tab separator", b"GET\t/api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("no version", b"GET /api/v1/projects\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("HTTP/0.9 line", b"GET /\r\n\r\n", 400, "invalid"),
    ("version 9.9", b"GET /api/v1/projects HTTP/9.9\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
    ("version 2.0", b"GET /api/v1/projects HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
    ("version 1.2", b"GET /healthz HTTP/1.2\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
    ("h2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "http_version_not_supported"),
    ("lower-case version", b"GET /api/v1/projects http/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("version garbage", b"GET /api/v1/projects HTTP/1.1x\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("control byte in target", b"GET /api/v1/\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("DEL in target", b"GET /api/v1/\x7f HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("NUL in target", b"GET /api/\x00v1 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("UTF-8 in target", b"GET /api/v1/\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("relative target", b"GET api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("bare LF", b"GET /api/v1/projects HTTP/1.1\nHost: x\n\n", 400, "invalid"),
    ("bare LF in a field", b"GET /api/v1/projects HTTP/1.1\r\nHost: x\n\r\n", 400, "invalid"),
    ("bare CR", b"GET /api/v1/projects HTTP/1.1\rHost: x\r\n\r\n", 400, "invalid"),
    ("space in field name", b"GET /api/v1/projects HTTP/1.1\r\nBad Header: x\r\n\r\n", 400, "invalid"),
    ("space before colon", b"GET /api/v1/projects HTTP/1.1\r\nHost : x\r\n\r\n", 400, "invalid"),
    ("no colon", b"GET /api/v1/projects HTTP/1.1\r\nHost\r\n\r\n", 400, "invalid"),
    ("empty field name", b"GET /api/v1/projects HTTP/1.1\r\n: x\r\n\r\n", 400, "invalid"),
    ("separator in name", b"GET /api/v1/projects HTTP/1.1\r\nX(y): 1\r\n\r\n", 400, "invalid"),
    ("obs-fold", b"GET /api/v1/projects HTTP/1.1\r\nX-A: 1\r\n 2\r\nHost: x\r\n\r\n", 400, "invalid"),
    ("NUL in value", b"GET /api/v1/projects HTTP/1.1\r\nX-A: a\x00b\r\n\r\n", 400, "invalid"),
    ("control in value", b"GET /healthz HTTP/1.1\r\nX-A: a\x1bb\r\n\r\n", 400, "invalid"),
    ("CL twice", b"POST /api/v1/projects HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400, "invalid"),
    ("CL list", b"POST /api/v1/projects HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n{}", 400, "invalid"),
    ("CL sign", b"POST /api/v1/projects HTTP/1.1\r\nContent-Length: +2\r\n\r\n{}", 400, "invalid"),
    ("CL empty", b"POST /api/v1/projects HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, "invalid"),
    (
        "CL overflow",
        b"POST /api/v1/projects HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        400,
        "invalid",
    ),
    (
        "CL and TE",
        b"POST /api/v1/projects HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "invalid",
    ),
    ("TE gzip", b"POST /api/v1/projects HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "invalid"),
    (
        "TE chunked twice",
        b"POST /api/v1/projects HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        400,
        "invalid",
    ),
    (
        "TE gzip, chunked",
        b"POST /api/v1/projects HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        501,
        "not_implemented",
    ),
    ("TE with parameter", b"POST /api/v1/projects HTTP/1.1\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400, "invalid"),
    (
        "TE in HTTP/1.0",
        b"POST /api/v1/projects HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "invalid",
    ),
    ("chunk size not hex", CHUNKED + b"zz\r\n", 400, "invalid"),
    ("chunk size 0x", CHUNKED + b"0x2\r\n{}\r\n0\r\n\r\n", 400, "invalid"),
    ("chunk size negative", CHUNKED + b"-2\r\n{}\r\n0\r\n\r\n", 400, "invalid"),
    ("chunk size overflow", CHUNKED + b"fffffffffffffffffffff\r\n", 400, "invalid"),
    ("chunk size space", CHUNKED + b"2 \r\n{}\r\n0\r\n\r\n", 400, "invalid"),
    ("chunk extension with spaces", CHUNKED + b"2; a = b\r\n{}\r\n0\r\n\r\n", 400, "invalid"),
    ("huge chunk extension", CHUNKED + b"2;a=" + b"x" * 5000 + b"\r\n{}\r\n0\r\n\r\n", 400, "invalid"),
    ("chunk data too long", CHUNKED + b"1\r\n{}\r\n0\r\n\r\n", 400, "invalid"),
    ("chunk bare LF", CHUNKED + b"2\n{}\n0\n\n", 400, "invalid"),
    ("bad trailer", CHUNKED + b"0\r\nNot a trailer\r\n\r\n", 400, "invalid"),
]


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


def exchange(server, raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Every answer the server sends on one connection to ``raw``, until it closes."""
    host, port = server.base_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    answers = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        length = int(headers.get("content-length", len(rest)))
        answers.append((int(status_line.split()[1]), headers, rest[:length]))
        data = rest[length:]
    return answers


@pytest.mark.parametrize(("raw", "status", "code"), [case[1:] for case in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_every_malformed_head_gets_the_envelope_before_chartr_sees_it(server, raw, status, code):
    before = server.output.count("not_authenticated") + server.output.count("Not Found")
    [(got, headers, body)] = exchange(server, raw)
    assert headers["content-type"] == "application/json", (got, headers, body)
    assert headers["connection"] == "close"
    error = json.loads(body)["error"]
    assert (got, error["code"]) == (status, code), error
    assert error["message"]
    assert server.output.count("not_authenticated") + server.output.count("Not Found") == before


def test_the_corpus_is_large_and_under_api_and_elsewhere():
    assert len(MALFORMED) >= 40
    assert any(b" /healthz " in raw for _, raw, _, _ in MALFORMED)


def authed(server, head: str, body: bytes = b"") -> bytes:
    return head.replace("TOKEN", server.token).replace("\n", "\r\n").encode() + body


@pytest.mark.parametrize(
    "head",
    [
        "GET /api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\nConnection: close\n\n",
        "\n\nGET /api/v1/projects HTTP/1.1\nHost:127.0.0.1\nAuthorization:\t Bearer TOKEN \t\nConnection: close\n\n",
        "GET /api/v1/projects HTTP/1.1\nhost: 127.0.0.1:80\nX-Empty:\nX-Tabs: a\tb\t c\nauthorization: Bearer TOKEN\n"
        "Connection: close\n\n",
        "GET /api/v1/projects?limit=5 HTTP/1.0\nAuthorization:      Bearer TOKEN     \n\n",
        "GET http://127.0.0.1/api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\n"
        "Connection: keep-alive, close\n\n",
    ],
)
def test_odd_but_valid_heads_reach_chartr_unchanged(server, head):
    [(status, headers, body)] = exchange(server, authed(server, head))
    assert status == 200, (status, body)
    assert "results" in json.loads(body)


def test_a_chunked_body_with_extensions_and_trailers_is_read_whole_and_the_next_request_follows(server):
    body = b'{"directory": "/srv/parser-chunked", "kind": "git"}'
    raw = authed(
        server,
        "POST /api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\n"
        "Content-Type: application/json\nTransfer-Encoding: Chunked\n\n",
        b"5;name=value;flag\r\n" + body[:5] + b'\r\n%x;q="a \\"b\\""\r\n' % (len(body) - 5) + body[5:] + b"\r\n"
        b"0\r\nX-Trailer: 1\r\n\r\n",
    ) + authed(
        server, "GET /api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\nConnection: close\n\n"
    )
    (created, first, made), (status, _, listed) = exchange(server, raw)
    # The view read the whole chunked body (as it reads one sent with Content-Length).
    assert created == 201, (created, made)
    assert json.loads(made)["directory"] == "/srv/parser-chunked"
    assert first["x-frame-options"] == "DENY", first
    assert status == 200 and "/srv/parser-chunked" in [p["directory"] for p in json.loads(listed)["results"]]


def test_pipelined_requests_on_a_kept_alive_connection_are_each_answered(server):
    one = "GET /api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\n\n"
    options = "OPTIONS /api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\n\n"
    last = "HEAD /healthz HTTP/1.1\nHost: 127.0.0.1\nConnection: close\n\n"
    answers = exchange(server, authed(server, one + options + one + last))
    assert [status for status, _, _ in answers] == [200, 200, 200, 200], answers


def test_what_follows_a_request_that_closes_the_connection_is_not_read(server):
    first = "GET /healthz HTTP/1.0\n\n"
    answers = exchange(server, authed(server, first) + b"FOO / HTTP/1.1\r\n\r\n")
    assert [status for status, _, _ in answers] == [200], answers


@pytest.mark.parametrize("method", ["PROPFIND", "TRACE", "PURGE", "LINK", "MKCOL", "SEARCH", "QUERY"])
def test_a_method_http_knows_reaches_chartr_and_gets_405_in_the_envelope(server, method):
    raw = authed(
        server,
        f"{method} /api/v1/projects HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer TOKEN\n"
        "Content-Length: 0\nConnection: close\n\n",
    )
    [(status, headers, body)] = exchange(server, raw)
    assert status == 405 and headers["content-type"].startswith("application/json"), (status, headers, body)
    assert json.loads(body)["error"]["code"] == "method_not_allowed"
    assert "GET" in headers["allow"]
