"""Bounds on what a client sends before a request reaches chartr, whoever it is (docs/deploy.md#limits).

uvicorn bounds the idle keep-alive time (``timeout_keep_alive``, gunicorn's
``keepalive``) and, with h11, the bytes of a request's head
(``h11_max_incomplete_event_size``), but not the time to send a head, the
count or size of its fields, nor the open connections of a worker (its
``limit_concurrency`` counts connections and would refuse every request, the
probes' too, while idle ones are open). ``LimitedProtocol`` sits between the
socket and uvicorn's protocol of each connection, follows the bytes (where each
request's head ends, and its body, by ``Content-Length`` or chunked framing) and
answers, with the JSON envelope and ``Connection: close``:

- 414 ``uri_too_long``: a request line over ``request_line_bytes``
  (gunicorn's ``limit_request_line``);
- 431 ``headers_too_large``: more than ``header_fields`` fields
  (``limit_request_fields``), one over ``header_field_bytes``
  (``limit_request_field_size``), or a head over ``header_bytes`` in all;
- 408 ``request_timeout``: a head not complete ``header_timeout`` seconds after
  the connection opened (or after the request's first byte, on a reused one);
- 503 ``too_many_connections`` with ``Retry-After``: any request but the health
  probes on a connection over ``max_connections`` (gunicorn's
  ``worker_connections``), so a load balancer still sees the worker alive.

Nothing here holds a request's bytes: they go on to uvicorn as they come
(only an over-the-cap connection keeps its request line, at most
``request_line_bytes``, to tell a probe). The body's time and size are
``chartr.serving.RequestGuard``'s. The worker installs it (chartr/workers.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chartr.errors import HeadersTooLarge, MalformedRequest, RequestTimeout, TooManyConnections, UriTooLong

#: Paths still served on a connection over the cap.
PROBE_PATHS = (b"/healthz", b"/readyz")
#: Probe connections served over the cap at most (uvicorn's ``limit_concurrency`` is the cap plus this).
PROBE_ROOM = 64
#: Longest chunk-size or trailer line followed; past it the framing is the parser's to refuse.
CHUNK_LINE_BYTES = 4096
#: After a refusal, bytes still read (and dropped) before the connection closes, so the client
#: reads the answer instead of a reset; and how long at most.
LINGER_BYTES = 1024 * 1024
LINGER_SECONDS = 1.0


@dataclass(frozen=True)
class Limits:
    max_connections: int
    request_line_bytes: int
    header_fields: int
    header_field_bytes: int
    header_bytes: int
    header_timeout: float


def refusal_bytes(error: type, message: str) -> bytes:
    """A complete HTTP/1.1 answer for ``error`` (a ``chartr.errors`` class), closing the connection."""
    body = json.dumps({"error": {"code": error.code, "message": message}}).encode()
    lines = [
        f"HTTP/1.1 {error.status} {error.reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    if error.retry_after is not None:
        lines.append(f"retry-after: {error.retry_after}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


class HeadScanner:
    """Follows one connection's request bytes: each head's line and fields, then its body's framing.

    ``feed`` returns None while the bytes are within the limits, else the refusal
    (an error class and a message). Framing it cannot follow (a bad
    ``Content-Length``, a chunk-size line it cannot read) is a 400 ``invalid``:
    it never stops following a connection. There is no upgrade to follow: the
    worker serves no WebSocket (chartr/workers.py).
    """

    def __init__(self, limits: Limits):
        self.limits = limits
        self.state = "head"
        self.line = bytearray()
        self.head_bytes = 0
        self.fields = 0
        self.request_line: bytes | None = None
        #: The connection's first request line: whether an over-the-cap connection is a probe's.
        self.first_request_line: bytes | None = None
        self.requests = 0
        self.length: int | None = None
        self.chunked = False
        self.remaining = 0

    @property
    def in_head(self) -> bool:
        return self.state == "head"

    @property
    def head_started(self) -> bool:
        return self.head_bytes > 0

    def feed(self, data: bytes) -> tuple[type, str] | None:
        view = memoryview(data)
        position = 0
        while position < len(view):
            if self.state == "length":
                taken = min(self.remaining, len(view) - position)
                position += taken
                self.remaining -= taken
                if self.remaining == 0:
                    self._next_request()
            elif self.state == "chunk-data":
                taken = min(self.remaining, len(view) - position)
                position += taken
                self.remaining -= taken
                if self.remaining == 0:
                    self.state = "chunk-end"
            else:
                end = data.find(b"\n", position)
                stop = len(data) if end < 0 else end + 1
                verdict = self._add_to_line(data[position:stop])
                if verdict is not None:
                    return verdict
                position = stop
                if end >= 0:
                    verdict = self._line_done(bytes(self.line).rstrip(b"\r\n"))
                    self.line.clear()
                    if verdict is not None:
                        return verdict
        return None

    def _add_to_line(self, piece: bytes) -> tuple[type, str] | None:
        self.line += piece
        if self.state != "head":
            if len(self.line) > CHUNK_LINE_BYTES:
                return MalformedRequest, f"A chunk-size line is longer than {CHUNK_LINE_BYTES} bytes."
            return None
        self.head_bytes += len(piece)
        if self.request_line is None:
            limit = self.limits.request_line_bytes
            if len(self.line.rstrip(b"\r\n")) > limit:
                return UriTooLong, f"The request line is longer than {limit} bytes."
        elif len(self.line.rstrip(b"\r\n")) > self.limits.header_field_bytes:
            return HeadersTooLarge, f"A header field is longer than {self.limits.header_field_bytes} bytes."
        if self.head_bytes > self.limits.header_bytes:
            return HeadersTooLarge, f"The request's headers are larger than {self.limits.header_bytes} bytes."
        return None

    def _line_done(self, line: bytes) -> tuple[type, str] | None:
        if self.state == "head":
            return self._head_line(line)
        if self.state == "chunk-size":
            try:
                self.remaining = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                return MalformedRequest, "A chunk size is not a hexadecimal number."
            self.state = "chunk-data" if self.remaining else "trailers"
        elif self.state == "chunk-end":
            self.state = "chunk-size"
        elif self.state == "trailers" and not line:
            self._next_request()
        return None

    def _head_line(self, line: bytes) -> tuple[type, str] | None:
        if self.request_line is None:
            if not line:  # empty lines before a request line are allowed (RFC 9112, 2.2)
                self.head_bytes = 0
                return None
            self.request_line = line
            if self.first_request_line is None:
                self.first_request_line = line
            return None
        if line:
            self.fields += 1
            if self.fields > self.limits.header_fields:
                return HeadersTooLarge, f"The request has more than {self.limits.header_fields} header fields."
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                try:
                    self.length = int(value.strip())
                except ValueError:
                    return MalformedRequest, "Content-Length is not a whole number."
                if self.length < 0:
                    return MalformedRequest, "Content-Length is not a whole number."
            elif name == b"transfer-encoding":
                self.chunked = b"chunked" in value.lower()
            return None
        self.requests += 1
        if self.chunked:
            self.state = "chunk-size"
        elif self.length:
            self.state, self.remaining = "length", self.length
        else:
            self._next_request()
        return None

    def _next_request(self) -> None:
        self.state = "head"
        self.head_bytes = self.fields = 0
        self.request_line = None
        self.length = None
        self.chunked = False

    def is_probe(self) -> bool | None:
        """Whether the connection's first request is a health probe; None until its request line is in."""
        if self.first_request_line is None:
            return None
        parts = self.first_request_line.split(b" ")
        target = parts[1] if len(parts) > 1 else b""
        return target.split(b"?", 1)[0] in PROBE_PATHS


class OpenConnections:
    """The connections one worker process holds open."""

    def __init__(self) -> None:
        self.count = 0


class LimitedProtocol(asyncio.Protocol):
    """uvicorn's protocol for one connection (``make_inner()``), behind the limits."""

    def __init__(self, make_inner: Callable[[], asyncio.Protocol], limits: Limits, connections: OpenConnections):
        self.make_inner = make_inner
        self.limits = limits
        self.connections = connections
        self.scanner = HeadScanner(limits)
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.over_cap = False
        self.held = bytearray()  # an over-the-cap connection's bytes until its request line is in
        self.refused = False
        self.lingered = 0

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.connections.count += 1
        self.over_cap = self.connections.count > self.limits.max_connections
        if not self.over_cap:
            self._start_inner()
        self._arm()

    def _start_inner(self) -> None:
        self.inner = self.make_inner()
        self.inner.connection_made(self.transport)

    def _arm(self) -> None:
        # The head's clock runs from the connection's start, and on a reused connection from the
        # request's first byte; between requests uvicorn's keep-alive timeout bounds the wait.
        wanted = self.scanner.in_head and (self.scanner.head_started or self.scanner.requests == 0)
        if wanted and self.timer is None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(self.limits.header_timeout, self._timed_out)
        elif not wanted and self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _timed_out(self) -> None:
        self.timer = None
        seconds = self.limits.header_timeout
        self._refuse(RequestTimeout, f"The request's headers did not arrive within {seconds:g} seconds.")

    def data_received(self, data: bytes) -> None:
        if self.refused:
            self._linger(len(data))
            return
        verdict = self.scanner.feed(data)
        if verdict is not None:
            self._refuse(*verdict)
            return
        self._arm()
        if self.inner is None:
            self._admit_or_refuse(data)
            return
        self.inner.data_received(data)

    def _admit_or_refuse(self, data: bytes) -> None:
        self.held += data
        probe = self.scanner.is_probe()
        if probe is None:
            return
        if not probe or self.connections.count > self.limits.max_connections + PROBE_ROOM:
            self._refuse(TooManyConnections, f"This worker holds {self.limits.max_connections} connections already.")
            return
        self._start_inner()
        held, self.held = bytes(self.held), bytearray()
        self.inner.data_received(held)

    def _refuse(self, error: type, message: str) -> None:
        if self.refused or self.transport is None or self.transport.is_closing():
            return
        self.refused = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.transport.write(refusal_bytes(error, message))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_SECONDS, self.transport.close)

    def _linger(self, received: int) -> None:
        self.lingered += received
        if self.lingered > LINGER_BYTES and self.transport is not None:
            self.transport.close()

    def eof_received(self) -> bool | None:
        if self.refused:
            return None
        if self.inner is not None:
            return self.inner.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.count -= 1
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()


def limited(protocol_class: Callable[..., asyncio.Protocol], limits: Limits) -> Callable[..., asyncio.Protocol]:
    """A protocol factory with uvicorn's signature, wrapping each of its connections in ``LimitedProtocol``."""
    connections = OpenConnections()

    def create(**kwargs: Any) -> asyncio.Protocol:
        return LimitedProtocol(lambda: protocol_class(**kwargs), limits, connections)

    create.connections = connections  # type: ignore[attr-defined]
    return create
