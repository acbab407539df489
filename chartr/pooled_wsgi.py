"""A WSGI app served from a fixed thread pool, answering with one hop back to the event loop.

asgiref's ``WsgiToAsgiInstance`` runs the WSGI app in a thread and hands each
message (the status line, each body chunk, the end) back to the event loop
through ``AsyncToSync``: three thread-to-loop round trips for an ordinary
response, about a fifth of a 1-item append's CPU in the server (a py-spy
profile, docs/benchmarks.md). Here the thread gathers the response while it
stays under ``BUFFER_LIMIT`` bytes and returns its messages, which the event
loop sends itself. A larger or longer response (a file download) is streamed
from the thread, so memory stays bounded.

The hop itself is the event loop's ``run_in_executor`` with a copy of the
request's context, not asgiref's ``sync_to_async``: nothing in the thread
calls back into async code through asgiref (the live hub schedules its own
deliveries on its loop), and asgiref's bookkeeping around the hop (context
propagation both ways, its executor checks, an ``AsyncToSync`` per request)
was a tenth of the worker's CPU per request (docs/benchmarks.md).

The app is still iterated to its end (and its response closed) in the one
thread that ran it, where Django's per-thread database connection lives.
"""

from __future__ import annotations

import asyncio
import contextvars
import io
from concurrent.futures import Executor
from tempfile import SpooledTemporaryFile

from asgiref.wsgi import WsgiToAsgiInstance

#: Responses up to this size go back to the event loop whole; beyond it they stream from the thread.
BUFFER_LIMIT = 256 * 1024
#: A body sent in several chunks is spooled to disk past this size, as asgiref does.
SPOOL_LIMIT = 64 * 1024

BAD_REQUEST = [
    {"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]},
    {"type": "http.response.body", "body": b"Bad Request: Too many duplicate headers"},
]


class BufferedWsgiInstance(WsgiToAsgiInstance):
    """One request through the WSGI app on ``executor``; subclasses set it."""

    executor: Executor

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError("WSGI wrapper received a non-HTTP scope")
        self.scope = scope
        self.send = send
        self.loop = asyncio.get_running_loop()
        body = await self.read_body(receive)
        try:
            messages = await self.loop.run_in_executor(self.executor, contextvars.copy_context().run, self.answer, body)
        finally:
            body.close()
        for message in messages:
            await send(message)

    @staticmethod
    async def read_body(receive):
        """The whole request body as a file: in memory when it came in one message (its bytes are
        in memory already), spooled to disk past ``SPOOL_LIMIT`` when it came in several."""
        message = await receive()
        if message["type"] != "http.request":
            raise ValueError("WSGI wrapper received a non-HTTP-request message")
        if not message.get("more_body"):
            return io.BytesIO(message.get("body", b""))
        body = SpooledTemporaryFile(max_size=SPOOL_LIMIT)
        while True:
            body.write(message.get("body", b""))
            if not message.get("more_body"):
                break
            message = await receive()
            if message["type"] != "http.request":
                body.close()
                raise ValueError("WSGI wrapper received a non-HTTP-request message")
        body.seek(0)
        return body

    def sync_send(self, message) -> None:
        """Send from the pool thread: the event loop sends it, the thread waits until it has."""
        asyncio.run_coroutine_threadsafe(self._send(message), self.loop).result()

    async def _send(self, message) -> None:
        await self.send(message)

    def answer(self, body) -> list[dict]:
        """Run the app; the messages left for the event loop to send (none when it streamed them itself)."""
        try:
            environ = self.build_environ(self.scope, body)
        except ValueError:
            return BAD_REQUEST
        pending: list[bytes] = []
        pending_size = 0
        streaming = False
        bytes_sent = 0
        for output in self.wsgi_application(environ, self.start_response):
            if self.response_content_length is not None:
                # The server must not send more bytes than the response's own Content-Length.
                output = output[: self.response_content_length - bytes_sent]
            bytes_sent += len(output)
            if streaming:
                self.sync_send({"type": "http.response.body", "body": output, "more_body": True})
            else:
                pending.append(output)
                pending_size += len(output)
                if pending_size > BUFFER_LIMIT:
                    streaming = self.response_started = True
                    self.sync_send(self.response_start)
                    self.sync_send({"type": "http.response.body", "body": b"".join(pending), "more_body": True})
                    pending, pending_size = [], 0
            if bytes_sent == self.response_content_length:
                break
        if streaming:
            self.sync_send({"type": "http.response.body"})
            return []
        self.response_started = True
        return [self.response_start, {"type": "http.response.body", "body": b"".join(pending)}]
