"""ASGI wrappers around both of chartr's handlers (see chartr/asgi.py).

``RequestGuard`` (its options) and ``SharedThreadAsgiHandler`` each answer one
question before Django sees a request:

- ``fresh_context``: which context variables a request starts with. None:
  uvicorn re-arms a keep-alive connection's reader from inside the request
  task, so the next request's task would inherit the previous request's
  context, asgiref's per-request executors included. A stream following a
  REST call on one connection then failed with "CurrentThreadExecutor already
  quit or is broken".
- ``limit_for``: whether the body may be read at all. A declared
  ``Content-Length`` over the limit is refused before a byte is read, and a
  chunked body is read on the event loop and cut off at the limit, so nothing
  larger than the limit is ever buffered in memory, whoever sends it. With
  ``body_timeout``, a body still incomplete after that long gets 408.
- ``SharedThreadAsgiHandler``: which thread a stream's synchronous steps
  (request signals, middleware, closing the response) run on. Django's own
  handler gives every request a ``ThreadSensitiveContext``, and asgiref gives
  each such context its own one-thread executor, alive until the request
  ends: an open SSE stream kept an idle thread for its whole life (1,000
  streams, 1,007 threads). Without the context those steps share asgiref's
  one process-wide thread; an ``EventStreamResponse``'s frames go to
  ``send`` without Django's streaming-response layers.
- ``json_errors``: what a client sees when a handler fails before it
  started answering: the JSON error envelope under /api/, never the server's
  plain-text "Internal Server Error".
- ``close_when_draining``: whether the connection stays open after the
  answer. Not once the process is draining (chartr/workers.py): a load
  balancer then keeps no idle connection to an instance about to stop.

``RequestGuard`` answers all of them but the handler's in one pass over
``send`` and ``receive``, and writes the access log's line (chartr/logs.py).
The tests turn its options on one at a time.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.http import HttpResponseBase

from chartr.errors import RequestTimeout
from chartr.logs import AccessLog
from kernel import draining
from kernel.event_stream import EventStreamResponse

logger = logging.getLogger("chartr.serving")

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_api_path(path: str) -> bool:
    return path.startswith("/api/")


async def send_error(send: Send, scope: Scope, status: int, code: str, message: str, *, close: bool = False) -> None:
    """A complete error response: the JSON envelope under /api/, plain text elsewhere."""
    if is_api_path(scope.get("path", "")):
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        content_type = b"application/json"
    else:
        body = message.encode()
        content_type = b"text/plain; charset=utf-8"
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_REQUEST_KEY = "chartr.request"


class SharedThreadAsgiHandler(ASGIHandler):
    """Django's ASGI handler minus the per-request ``ThreadSensitiveContext``.

    Its thread-sensitive ``sync_to_async`` calls (signals, sync middleware
    hooks, ``response.close``) then run on asgiref's single process-wide
    thread, which they were only ever briefly on; blocking work belongs on a
    pool of its own (the stream's reads use the live hub's pool).
    """

    def __init__(self, *, when_done: Callable[[Any], None] | None = None):
        super().__init__()
        #: Called on the event loop with the request (None if none was made) once it is over,
        #: before its objects go.
        self.when_done = when_done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            await self.handle(scope, receive, send)
        finally:
            # The middleware ties the request into cycles (the messages storage and the
            # lazy user both point back at it). Emptied once it is answered, it goes,
            # with everything it holds, as soon as the stream ends, not at the next
            # full collection: a thousand closed streams left 40 MiB in a fragmented heap.
            request = scope.pop(_REQUEST_KEY, None)
            if self.when_done is not None:
                self.when_done(request)
            if request is not None:
                request.__dict__.clear()

    def create_request(self, scope: Scope, body_file):
        request, error_response = super().create_request(scope, body_file)
        scope[_REQUEST_KEY] = request
        return request, error_response

    async def send_response(self, response: HttpResponseBase, send: Send) -> None:
        """Django's, except that an ``EventStreamResponse``'s frames go to ``send`` one message
        each, without the streaming response's layers (kernel/event_stream.py), and to the
        innermost ``send`` once the response started (``body_send``)."""
        frames = response.frames if isinstance(response, EventStreamResponse) else None
        if frames is None:
            await super().send_response(response, send)
            return
        await send({"type": "http.response.start", "status": response.status_code, "headers": _headers(response)})
        send_body = body_send(send)
        async with aclosing(frames):
            async for frame in frames:
                await send_body({"type": "http.response.body", "body": frame, "more_body": True})
        await send_body({"type": "http.response.body"})

    async def listen_for_disconnect(self, receive: Receive) -> None:
        """Django's, returning when the client went away instead of raising ``RequestAborted``.

        ``handle`` calls ``result()`` on this task, which adds its own frame to
        the exception's traceback; that frame's list of tasks holds the task, and
        the task the exception: a cycle of about a hundred objects per closed
        stream (the request, its response, the stream's coroutines) that only
        the cyclic collector frees, long after, in a heap it has fragmented.
        ``handle`` ignores ``RequestAborted`` anyway, so returning changes nothing else.
        """
        message = await receive()
        if message["type"] != "http.disconnect":
            raise AssertionError(f"Invalid ASGI message after request body: {message['type']}")


def _headers(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    """The response's headers and cookies as ``ASGIHandler.send_response`` encodes them."""
    headers = [
        (
            header.encode("ascii") if isinstance(header, str) else bytes(header),
            value.encode("latin1") if isinstance(value, str) else bytes(value),
        )
        for header, value in response.items()
    ]
    headers += [
        (b"Set-Cookie", cookie.output(header="").encode("ascii").strip()) for cookie in response.cookies.values()
    ]
    return headers


def body_send(send: Send) -> Send:
    """The ``send`` under every wrapper that only looks at the response's start.

    Such a wrapper names the ``send`` it wraps as ``passes_body_to``; a stream
    sending a frame to a thousand subscribers then skips their calls.
    """
    while (inner := getattr(send, "passes_body_to", None)) is not None:
        send = inner
    return send


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class _ResponseSend:
    """The server's ``send`` as the app sees it: remembers whether the response has
    started (after that, an error can no longer be answered with a fresh response),
    says ``Connection: close`` while draining and writes the access log's line."""

    def __init__(self, send: Send, scope: Scope, guard: RequestGuard):
        self.send = self.passes_body_to = send
        self.scope = scope
        self.guard = guard
        self.started = False

    def __call__(self, message: Message) -> Awaitable[None]:
        # A plain function handing on the awaitable: no coroutine of its own for
        # every frame of every open stream.
        if message["type"] == "http.response.start":
            self.started = True
            if self.guard.close_when_draining and draining.is_draining():
                headers = [(name, value) for name, value in message.get("headers", ()) if name.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            if self.guard.access_log is not None:
                self.guard.access_log.response(self.scope, message["status"])
        return self.send(message)


class RequestGuard:
    """Every step that runs around a request before the handlers, in one pass over
    ``send`` and ``receive`` (four nested wrappers cost a coroutine, a closure and a
    ``send`` call each per message):

    - ``fresh_context``: the request runs in an empty ``contextvars.Context``; a
      task of its own only when it did not start in one (the worker has uvicorn
      start each request's task in an empty context, chartr/workers.py);
    - ``limit_for``: a body over ``limit_for(path)`` bytes is refused with 413,
      a declared ``Content-Length`` before a byte is read, a chunked body once it
      passes the limit (read on the event loop), so nothing larger is ever buffered;
      one that takes longer than ``body_timeout`` seconds gets 408 (both before the
      handler, and so the token check, runs);
    - ``json_errors``: a failure before a response started is answered with the
      500 envelope (JSON under /api/), never the server's plain-text one;
    - ``close_when_draining``: ``Connection: close`` on every response that starts
      while the process is draining (chartr/workers.py), so a load balancer keeps no
      idle connection to an instance about to stop;
    - ``access_log``: one line per response started (chartr/logs.py).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        fresh_context: bool = False,
        limit_for: Callable[[str], int] | None = None,
        json_errors: bool = False,
        close_when_draining: bool = False,
        access_log: AccessLog | None = None,
        body_timeout: float | None = None,
    ):
        self.app = app
        self.body_timeout = body_timeout
        self.fresh_context = fresh_context
        self.limit_for = limit_for
        self.json_errors = json_errors
        self.close_when_draining = close_when_draining
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.fresh_context and len(contextvars.copy_context()):
            await asyncio.create_task(self._serve(scope, receive, send), context=contextvars.Context())
        else:
            await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response_send = _ResponseSend(send, scope, self)
        limit = None
        if self.limit_for is not None:
            limit = self.limit_for(scope["path"])
            declared = declared_length(scope)
            if declared is not None and declared > limit:
                await self._refuse(response_send, scope, limit)
                return
            # The whole body is read here, on the event loop, before any handler (and so any
            # token check) runs: at most the limit (a declared length is all the server's
            # parser delivers; a chunked one is cut off past the limit), within body_timeout.
            try:
                async with asyncio.timeout(self.body_timeout):
                    read = await read_within(receive, limit)
            except TimeoutError:
                await send_error(
                    response_send,
                    scope,
                    RequestTimeout.status,
                    RequestTimeout.code,
                    f"The request's body did not arrive within {self.body_timeout:g} seconds.",
                    close=True,
                )
                return
            if read is None:
                await self._refuse(response_send, scope, limit)
                return
            receive, length = read
            if declared is None:
                scope = with_read_length(scope, length)
        try:
            await self.app(scope, receive, response_send)
        except Exception:
            if response_send.started or not self.json_errors:
                raise
            logger.exception("Unhandled error serving %s %s", scope.get("method"), scope.get("path"))
            await send_error(response_send, scope, 500, "server_error", "The server failed to handle this request.")

    @staticmethod
    async def _refuse(send: Send, scope: Scope, limit: int) -> None:
        # The unread rest of the body would otherwise be taken for the next
        # request on this connection: close it once the answer is sent.
        await send_error(
            send, scope, 413, "payload_too_large", f"The request body is larger than {limit} bytes.", close=True
        )


def with_read_length(scope: Scope, length: int) -> Scope:
    """``scope`` for a body sent without ``Content-Length`` (chunked), once it is read whole: its
    length declared as ``Content-Length`` and no ``Transfer-Encoding``, so the WSGI side, which
    reads ``CONTENT_LENGTH`` bytes of a body, reads all of it (PEP 3333 has no chunked input)."""
    headers = [(name, value) for name, value in scope.get("headers", ()) if name != b"transfer-encoding"]
    headers.append((b"content-length", str(length).encode("ascii")))
    return {**scope, "headers": headers}


async def read_within(receive: Receive, limit: int) -> tuple[Receive, int] | None:
    """A ``receive`` handing on the whole body, read now, in one message, and the body's length;
    None once it passed ``limit`` bytes.

    Later calls (the wait for a disconnect) go to ``receive`` itself.
    """
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending = [message]  # the client went away before the body was complete
            break
        chunks.append(message.get("body", b""))
        received += len(chunks[-1])
        if received > limit:
            return None
        if not message.get("more_body"):
            pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
            break

    async def receive_read() -> Message:
        return pending.pop() if pending else await receive()

    return receive_read, received
