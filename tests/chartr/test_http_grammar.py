"""chartr/http_grammar.py through chartr/connection_limits.py's HeadScanner and LimitedProtocol: which heads are
refused with what, byte by byte, and that uvicorn's parser gets only lines already checked (the real server's
answers are tests/process/test_parser_errors.py's)."""

from __future__ import annotations

import asyncio

import httptools
import pytest

from chartr.connection_limits import HeadScanner, Limits, OpenConnections
from chartr.errors import HttpVersionNotSupported, MalformedRequest, Unimplemented
from chartr.http_grammar import KNOWN_METHODS, request_line_refusal
from tests.chartr.test_connection_limits import answer, connect

LIMITS = Limits(
    max_connections=2,
    request_line_bytes=200,
    header_fields=10,
    header_field_bytes=200,
    header_bytes=2000,
    header_timeout=5,
)
TE = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"


def verdict_of(raw: bytes, size: int = 1):
    scanner = HeadScanner(LIMITS)
    for start in range(0, len(raw), size):
        verdict = scanner.feed(raw[start : start + size])
        if verdict is not None:
            return verdict[0]
    return None


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"FOO / HTTP/1.1\r\n\r\n", Unimplemented),
        (b"get / HTTP/1.1\r\n\r\n", Unimplemented),
        (b"CONNECT / HTTP/1.1\r\n\r\n", Unimplemented),
        (b"G@T / HTTP/1.1\r\n\r\n", MalformedRequest),
        (b"GET / HTTP/3.0\r\n\r\n", HttpVersionNotSupported),
        (b"GET / HTTP/1.1.1\r\n\r\n", MalformedRequest),
        (b"GET /a b HTTP/1.1\r\n\r\n", MalformedRequest),
        (b"GET /\x80 HTTP/1.1\r\n\r\n", MalformedRequest),
        (b"GET x HTTP/1.1\r\n\r\n", MalformedRequest),
        (b"GET / HTTP/1.1\n\n", MalformedRequest),
        (b"GET / HTTP/1.1\r\nA\r\n\r\n", MalformedRequest),
        (b"GET / HTTP/1.1\r\nA :b\r\n\r\n", MalformedRequest),
        (b"GET / HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", MalformedRequest),
        (b"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", MalformedRequest),
        (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", MalformedRequest),
        (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", MalformedRequest),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", MalformedRequest),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked,\r\n\r\n", MalformedRequest),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", Unimplemented),
        (TE + b"+1\r\nx\r\n0\r\n\r\n", MalformedRequest),
        (TE + b"1;a=\r\nx\r\n0\r\n\r\n", MalformedRequest),
        (TE + b"1\r\nxy\r\n0\r\n\r\n", MalformedRequest),
        (TE + b"0\r\nA B: c\r\n\r\n", MalformedRequest),
    ],
)
def test_a_head_off_the_grammar_is_refused_with_its_status_whatever_the_split(raw, error):
    assert verdict_of(raw) is error
    assert verdict_of(raw, len(raw)) is error


@pytest.mark.parametrize(
    "raw",
    [
        b"\r\nGET /a?b=c#d HTTP/1.0\r\nX:\r\nY:\t a\tb \t\r\nZ: \xe9\r\n\r\n",
        b"OPTIONS * HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
        b"GET http://user@host:80/x HTTP/1.1\r\nConnection: keep-alive\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length:\t3\t\r\n\r\nabc",
        TE.replace(b"chunked", b"CHUNKED") + b'3;a;b=c;d="e \\" f"\r\nabc\r\n0\r\nT: 1\r\n\r\n',
    ],
)
def test_odd_but_valid_heads_pass(raw):
    assert verdict_of(raw) is None and verdict_of(raw, len(raw)) is None


def test_uvicorn_gets_a_line_only_once_it_is_complete_and_checked_and_nothing_after_a_closing_request():
    async def scenario():
        protocol, transport, inner = connect(OpenConnections(), LIMITS)
        protocol.data_received(b"GET / HTTP/1.1\r\nHo")
        partial = inner.received
        protocol.data_received(b"st: x\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")
        body = inner.received
        protocol.data_received(b"cdGET / HTTP/1.0\r\n\r\nFOO / HTTP/1.1\r\n\r\n")
        return partial, body, inner.received, transport.written

    partial, body, received, written = asyncio.run(scenario())
    assert partial == b"GET / HTTP/1.1\r\n"
    assert body.endswith(b"Content-Length: 4\r\n\r\nab")
    assert received.endswith(b"cdGET / HTTP/1.0\r\n\r\n") and written == b""


def test_a_refused_line_never_reaches_uvicorn_and_the_answer_is_the_envelope():
    async def scenario():
        protocol, transport, inner = connect(OpenConnections(), LIMITS)
        protocol.data_received(b"GET / HTTP/1.1\r\nBad")
        protocol.data_received(b" Header: x\r\n\r\n")
        return transport, inner

    transport, inner = asyncio.run(scenario())
    status, headers, body = answer(transport)
    assert (status, body["error"]["code"], headers["connection"]) == (400, "invalid", "close")
    assert inner.received == b"GET / HTTP/1.1\r\n"


#: Methods to hold KNOWN_METHODS to: llhttp's, RTSP's (llhttp refuses them in an HTTP request),
#: some of IANA's that llhttp does not read, and tokens no registry has.
CANDIDATE_METHODS = sorted(
    KNOWN_METHODS
    | {b"CONNECT", b"PRI", b"DESCRIBE", b"SETUP", b"PLAY", b"LABEL", b"UPDATE", b"BASELINE-CONTROL", b"FOO", b"get"}
)


@pytest.mark.parametrize("method", CANDIDATE_METHODS, ids=[m.decode() for m in CANDIDATE_METHODS])
def test_a_method_reaches_uvicorn_exactly_when_its_parser_reads_it(method):
    parser = httptools.HttpRequestParser(object())
    try:
        parser.feed_data(method + b" /x HTTP/1.1\r\nHost: x\r\n\r\n")
        llhttp_reads = True
    except httptools.HttpParserUpgrade:
        llhttp_reads = False  # CONNECT: a tunnel, which chartr does not serve
    except httptools.HttpParserError:
        llhttp_reads = False
    assert (request_line_refusal(method + b" /x HTTP/1.1") is None) is llhttp_reads
