"""The two ASGI pieces chartr adds to its handlers (chartr/asgi.py routes between them).

The HTTP front (request heads, their size and time, bodies' time, idle and
total connections) is nginx's (deploy/nginx/chartr.conf) and the server's own
settings' (gunicorn.conf.py, chartr/workers.py): nothing here reads bytes off a
socket, and no request body is read before the view that uses it asks for it,
after authentication (a declared ``Content-Length`` over the limit is refused
then, before a byte is read: kernel/api/plain.py, kernel/api/parsers.py).

- ``Front`` wraps every request: the two refusals chartr makes itself when a
  client reaches it directly (an HTTP/1.1 request without ``Host``, RFC 9112
  §3.2; a body without ``Content-Length``, which WSGI cannot read), the
  JSON 500 for a failure before a response started, ``Connection: close``
  once the process is draining, and the access log's line (kernel/logs.py).
- ``StreamApplication`` serves the coroutine views (the live streams) as a
  plain ASGI application on Django's request, middleware and signals, but not
  on Django's ASGI handler: that handler gives every request a
  ``ThreadSensitiveContext``, and asgiref a thread of its own to each such
  context for as long as the request lasts (1,000 open streams held 1,007
  threads). Here the streams' few synchronous steps (request signals, sync
  middleware hooks, closing the response) share asgiref's one process-wide
  thread, and an ``EventStreamResponse``'s frames go to ``send`` one message
  each, without the streaming response's layers (kernel/event_stream.py).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.base import BaseHandler
from django.http import HttpResponseBase
from django.urls import set_script_prefix

from kernel import draining
from kernel.event_stream import EventStreamResponse
from kernel.logs import AccessLog

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


def refusal(scope: Scope) -> tuple[int, str, str] | None:
    """What chartr refuses before any handler, from the head the server parsed: (status, code, message)."""
    names = {name.lower() for name, _ in scope.get("headers", ())}
    if scope.get("http_version") == "1.1" and b"host" not in names:
        return 400, "invalid", "An HTTP/1.1 request names its host in a Host header (RFC 9112, 3.2)."
    if b"transfer-encoding" in names and b"content-length" not in names:
        return 411, "length_required", "Send the request body with a Content-Length."
    return None


class _ResponseSend:
    """The server's ``send`` as the app sees it: remembers whether the response has
    started (after that, an error can no longer be answered with a fresh response),
    says ``Connection: close`` while draining and writes the access log's line.
    ``passes_body_to`` names the ``send`` a stream's frames may skip to (``body_send``)."""

    def __init__(self, send: Send, scope: Scope, access_log: AccessLog | None):
        self.send = self.passes_body_to = send
        self.scope = scope
        self.access_log = access_log
        self.started = False

    def __call__(self, message: Message) -> Awaitable[None]:
        # A plain function handing on the awaitable: no coroutine of its own per frame of every stream.
        if message["type"] == "http.response.start":
            self.started = True
            if draining.is_draining():
                headers = [(name, value) for name, value in message.get("headers", ()) if name.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            if self.access_log is not None:
                self.access_log.response(self.scope, message["status"])
        return self.send(message)


def body_send(send: Send) -> Send:
    """The ``send`` under every wrapper that only looks at the response's start (``passes_body_to``):
    a stream sending a frame to a thousand subscribers skips their calls."""
    while (inner := getattr(send, "passes_body_to", None)) is not None:
        send = inner
    return send


class Front:
    """Around every request: ``refusal``, the JSON 500, ``Connection: close`` while draining
    (a load balancer then keeps no idle connection to an instance about to stop), the access log."""

    def __init__(self, app: ASGIApp, *, access_log: AccessLog | None = None):
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response_send = _ResponseSend(send, scope, self.access_log)
        refused = refusal(scope)
        if refused is not None:
            await send_error(response_send, scope, *refused, close=True)
            return
        try:
            await self.app(scope, receive, response_send)
        except Exception:
            if response_send.started:
                raise
            logger.exception("Unhandled error serving %s %s", scope.get("method"), scope.get("path"))
            await send_error(response_send, scope, 500, "server_error", "The server failed to handle this request.")


def response_headers(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    """The response's headers and cookies, encoded as Django's ASGI handler encodes them."""
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


async def until_disconnect(receive: Receive) -> None:
    """Returns once the client went away (a stream's request has no body to read: any is dropped)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def send_body(parts: AsyncIterator[bytes], send: Send) -> None:
    async with aclosing(parts):
        async for part in parts:
            await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body"})


async def body_parts(response: HttpResponseBase) -> AsyncIterator[bytes]:
    """Any other response's body: a streaming one's parts as Django gives them, else its content."""
    if response.streaming:
        async for part in response:
            yield part
    else:
        yield response.content


class StreamApplication:
    """The coroutine views as a plain ASGI application (see the module's docstring).

    ``when_done(request)`` runs on the event loop once a request is over, before
    its objects go: it gives back the stream's slot.
    """

    def __init__(self, *, when_done: Callable[[Any], None] | None = None):
        self.handler = BaseHandler()
        self.handler.load_middleware(is_async=True)
        self.when_done = when_done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        set_script_prefix(settings.FORCE_SCRIPT_NAME or scope.get("root_path", "") or "/")
        try:
            request = ASGIRequest(scope, io.BytesIO())
        except UnicodeDecodeError:  # as Django's handler answers it
            await send_error(send, scope, 400, "invalid", "The request's query string is not UTF-8.")
            return
        await signals.request_started.asend(sender=self.__class__, scope=scope)
        response = None
        try:
            response = await self.handler.get_response_async(request)
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": response_headers(response)}
            )
            frames = response.frames if isinstance(response, EventStreamResponse) else None
            parts = frames if frames is not None else body_parts(response)
            await self.send_until_disconnect(parts, receive, body_send(send) if frames is not None else send)
        finally:
            if self.when_done is not None:
                self.when_done(request)
            if response is not None:
                # request_finished, on asgiref's shared thread (no per-request context here).
                await sync_to_async(response.close, thread_sensitive=True)()
            # The middleware ties the request into cycles (the messages storage and the lazy user
            # both point back at it). Emptied here, it goes with everything it holds as soon as the
            # stream ends, not at the next full collection: a thousand closed streams left 40 MiB
            # in a fragmented heap.
            request.__dict__.clear()

    @staticmethod
    async def send_until_disconnect(parts: AsyncIterator[bytes], receive: Receive, send: Send) -> None:
        """The body's parts until they end or the client goes away, whichever is first."""
        sending = asyncio.ensure_future(send_body(parts, send))
        listening = asyncio.ensure_future(until_disconnect(receive))
        try:
            done, _ = await asyncio.wait({sending, listening}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sending, listening):
                task.cancel()
            await asyncio.wait({sending, listening})
        if sending in done and not sending.cancelled() and (error := sending.exception()) is not None:
            raise error
