"""chartr/connection_limits.py: the head's limits and clock, and the connection cap, driven byte by byte
with a fake transport (the real server's answers are tests/process/test_limits.py's)."""

from __future__ import annotations

import asyncio
import json

import pytest

from chartr.connection_limits import HeadScanner, LimitedProtocol, Limits, OpenConnections, limited
from chartr.errors import HeadersTooLarge, MalformedRequest, UriTooLong

LIMITS = Limits(
    max_connections=2,
    request_line_bytes=64,
    header_fields=4,
    header_field_bytes=40,
    header_bytes=200,
    header_timeout=0.05,
)


def test_requests_within_the_limits_pass_with_their_bodies_whatever_the_split():
    stream = (
        b"\r\nPOST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        b"POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nTrailer: 1\r\n\r\n"
        b"GET /c HTTP/1.1\r\n\r\n"
    )
    for size in (1, 2, 7, len(stream)):
        scanner = HeadScanner(LIMITS)
        verdicts = [scanner.feed(stream[i : i + size]) for i in range(0, len(stream), size)]
        assert verdicts == [None] * len(verdicts)
        assert scanner.requests == 3
        assert scanner.in_head and not scanner.head_started


@pytest.mark.parametrize(
    ("head", "error"),
    [
        (b"GET /" + b"a" * 70 + b" HTTP/1.1\r\n\r\n", UriTooLong),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * 40 + b"\r\n\r\n", HeadersTooLarge),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(5)) + b"\r\n", HeadersTooLarge),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * 30 + b"\r\nY: " + b"b" * 30 + b"\r\n\r\n", None),
    ],
)
def test_a_head_over_a_limit_is_refused_as_its_bytes_arrive(head, error):
    scanner = HeadScanner(LIMITS)
    verdict = None
    for byte in range(len(head)):
        verdict = verdict or scanner.feed(head[byte : byte + 1])
    assert (verdict[0] if verdict else None) is error


def test_the_heads_bytes_together_are_bounded_even_when_each_field_is_small():
    scanner = HeadScanner(Limits(2, 64, 100, 40, 100, 1))
    verdict = scanner.feed(b"GET / HTTP/1.1\r\n" + b"X: 12345678901234567890\r\n" * 4)
    assert verdict is not None and verdict[0] is HeadersTooLarge and "100 bytes" in verdict[1]


def test_a_body_is_not_taken_for_a_head_however_it_looks():
    scanner = HeadScanner(LIMITS)
    body = b"\r\n".join([b"x" * 100] * 5)
    assert scanner.feed(b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body) is None
    assert scanner.in_head and scanner.requests == 1


class FakeTransport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.written = b""
        self.closed = False

    def write(self, data):
        self.written += data

    def can_write_eof(self):
        return True

    def write_eof(self):
        pass

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed


class Inner(asyncio.Protocol):
    def __init__(self):
        self.received = b""
        self.made = self.lost = False

    def connection_made(self, transport):
        self.made = True

    def data_received(self, data):
        self.received += data

    def connection_lost(self, exc):
        self.lost = True


def answer(transport) -> tuple[int, dict, dict]:
    head, _, body = transport.written.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


def connect(connections, limits=LIMITS):
    inner = Inner()
    protocol = LimitedProtocol(lambda: inner, limits, connections)
    transport = FakeTransport()
    protocol.connection_made(transport)
    return protocol, transport, inner


def test_a_silent_connection_gets_408_once_the_head_timeout_passes_and_a_prompt_one_does_not():
    async def scenario():
        connections = OpenConnections()
        silent, silent_transport, _ = connect(connections)
        prompt, prompt_transport, inner = connect(connections)
        prompt.data_received(b"GET / HTTP/1.1\r\n\r\n")
        await asyncio.sleep(0.15)
        return silent_transport, prompt_transport, inner

    silent_transport, prompt_transport, inner = asyncio.run(scenario())
    status, headers, body = answer(silent_transport)
    assert (status, body["error"]["code"], headers["connection"]) == (408, "request_timeout", "close")
    assert prompt_transport.written == b"" and inner.received == b"GET / HTTP/1.1\r\n\r\n"


def test_a_reused_connection_idles_between_requests_on_uvicorns_clock_not_the_heads():
    async def scenario():
        protocol, transport, _ = connect(OpenConnections())
        protocol.data_received(b"GET / HTTP/1.1\r\n\r\n")
        await asyncio.sleep(0.15)
        quiet = transport.written
        protocol.data_received(b"GET / HT")
        await asyncio.sleep(0.15)
        return quiet, transport

    quiet, transport = asyncio.run(scenario())
    assert quiet == b""
    assert answer(transport)[0] == 408


def test_over_the_cap_only_the_probes_are_served_and_the_count_falls_as_connections_close():
    async def scenario():
        connections = OpenConnections()
        first = connect(connections)
        connect(connections)
        refused, refused_transport, refused_inner = connect(connections)
        refused.data_received(b"GET /api/v1/projects HTTP/1.1\r\n\r\n")
        probe, probe_transport, probe_inner = connect(connections)
        probe.data_received(b"GET /heal")
        probe.data_received(b"thz HTTP/1.1\r\n\r\n")
        count = connections.count
        first[0].connection_lost(None)
        refused.connection_lost(None)
        return count, connections.count, refused_transport, refused_inner, probe_transport, probe_inner

    count, after, refused_transport, refused_inner, probe_transport, probe_inner = asyncio.run(scenario())
    status, headers, body = answer(refused_transport)
    assert (status, body["error"]["code"], headers["retry-after"]) == (503, "too_many_connections", "1")
    assert not refused_inner.made and refused_inner.received == b""
    assert probe_transport.written == b"" and probe_inner.received == b"GET /healthz HTTP/1.1\r\n\r\n"
    assert (count, after) == (4, 2)


def test_limited_hands_uvicorns_arguments_to_each_connections_protocol():
    made = []

    def protocol_class(**kwargs):
        made.append(kwargs)
        return Inner()

    async def scenario():
        create = limited(protocol_class, LIMITS)
        protocol = create(config="c", server_state="s", app_state={}, _loop=None)
        protocol.connection_made(FakeTransport())
        count = create.connections.count
        protocol.connection_lost(None)
        return count

    assert asyncio.run(scenario()) == 1
    assert made == [{"config": "c", "server_state": "s", "app_state": {}, "_loop": None}]


def test_an_upgrade_header_does_not_take_the_connection_out_of_the_limits():
    scanner = HeadScanner(LIMITS)
    assert scanner.feed(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n") is None
    verdict = scanner.feed(b"GET /" + b"a" * 70 + b" HTTP/1.1\r\n")
    assert verdict is not None and verdict[0] is UriTooLong


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST / HTTP/1.1\r\nContent-Length: ten\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"x" * 5000,
    ],
)
def test_framing_that_cannot_be_followed_is_a_400_never_a_way_past_the_limits(request_bytes):
    verdict = HeadScanner(LIMITS).feed(request_bytes)
    assert verdict is not None and verdict[0] is MalformedRequest
