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
  ``worker_connections``), so a load balancer still sees the worker alive;
- 400 ``invalid``, 501 ``not_implemented``, 505 ``http_version_not_supported``:
  a head that is not HTTP/1.x as RFC 9112 writes it, a method or transfer
  coding chartr does not serve, another HTTP version (chartr/http_grammar.py).
  uvicorn's parser thus only sees heads it reads, and never answers with its
  own plain-text 400.

Nothing here holds a request's bytes but the line of its head in progress (at
most ``request_line_bytes`` or ``header_field_bytes``, until its end and its
check): a body's go on to uvicorn as they come (an over-the-cap connection
keeps its request line too, to tell a probe). The body's time and size are
``chartr.serving.RequestGuard``'s. The worker installs it (chartr/workers.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chartr import http_grammar
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

    ``feed`` returns None while the bytes are within the limits and the grammar
    (chartr/http_grammar.py), else the refusal (an error class and a message),
    at the end of the first line that breaks it. Framing it cannot follow (a bad
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
        #: The request's transfer codings, lower-case, in order (``chunked`` last, once, or it is refused).
        self.codings: list[bytes] = []
        #: The request's Connection options, lower-case; and whether it is the connection's last.
        self.connection: list[bytes] = []
        self.last = False
        #: Bytes of the last ``feed`` after the connection's last request: uvicorn gets none of them.
        self.dropped = 0
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
        self.dropped = 0
        while position < len(view):
            if self.state == "closed":  # RFC 9112, 9.6: no request after one that closes is read
                self.dropped = len(view) - position
                return None
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
                    verdict = self._line_done(bytes(self.line))
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
        if not line.endswith(b"\r\n"):
            return MalformedRequest, "A line of the request ends in a bare LF; HTTP/1.1 lines end in CRLF."
        line = line[:-2]
        if self.state == "head":
            return self._head_line(line)
        if self.state == "chunk-size":
            size = http_grammar.chunk_size(line)
            if isinstance(size, tuple):
                return size
            self.remaining = size
            self.state = "chunk-data" if self.remaining else "trailers"
        elif self.state == "chunk-end":
            if line:
                return MalformedRequest, "A chunk's data is longer than its size."
            self.state = "chunk-size"
        elif self.state == "trailers":
            if not line:
                self._next_request()
                return None
            parsed = http_grammar.field(line)
            return parsed if isinstance(parsed[0], type) else None
        return None

    def _head_line(self, line: bytes) -> tuple[type, str] | None:
        if self.request_line is None:
            if not line:  # empty lines before a request line are allowed (RFC 9112, 2.2)
                self.head_bytes = 0
                return None
            self.request_line = line
            if self.first_request_line is None:
                self.first_request_line = line
            return http_grammar.request_line_refusal(line)
        if line:
            return self._field_line(line)
        version = self.request_line.rsplit(b" ", 1)[-1]
        refusal = http_grammar.framing_refusal(version, self.length, self.codings)
        if refusal is not None:
            return refusal
        self.last = http_grammar.closes(version, self.connection)
        self.requests += 1
        if self.codings:
            self.state = "chunk-size"
        elif self.length:
            self.state, self.remaining = "length", self.length
        else:
            self._next_request()
        return None

    def _field_line(self, line: bytes) -> tuple[type, str] | None:
        self.fields += 1
        if self.fields > self.limits.header_fields:
            return HeadersTooLarge, f"The request has more than {self.limits.header_fields} header fields."
        parsed = http_grammar.field(line)
        if isinstance(parsed[0], type):
            return parsed  # type: ignore[return-value]
        name, value = parsed
        if name == b"content-length":
            length = http_grammar.content_length(value, self.length)
            if isinstance(length, tuple):
                return length
            self.length = length
        elif name == b"connection":
            self.connection += [option.strip(b" \t").lower() for option in value.split(b",")]
        elif name == b"transfer-encoding":
            codings = http_grammar.transfer_codings(value)
            if isinstance(codings, tuple):
                return codings
            self.codings += codings
        return None

    def _next_request(self) -> None:
        self.state = "closed" if self.last else "head"
        self.head_bytes = self.fields = 0
        self.request_line = None
        self.length = None
        self.codings = []
        self.connection = []

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
        self.partial = b""  # the head's line in progress, until its end
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
        # A head's line in progress waits for its end and its check: llhttp refuses some bytes at once.
        stream = self.partial + data if self.partial else data
        cut = len(stream) - len(self.scanner.line) - self.scanner.dropped
        ready, self.partial = stream[:cut], bytes(stream[cut:])
        if not ready:
            return
        if self.inner is None:
            self._admit_or_refuse(ready)
            return
        self.inner.data_received(ready)

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
