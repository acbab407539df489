"""asgiref's WSGI adapter, run on a fixed thread pool, answering with one hop back to the event loop.

asgiref's ``WsgiToAsgiInstance`` runs the WSGI app in a thread and hands each
message (the status line, each body chunk, the end) back to the event loop
through ``AsyncToSync``: three thread-to-loop round trips for an ordinary
response, about a fifth of a 1-item append's CPU in the server (a py-spy
profile, docs/benchmarks.md). Here the thread gathers the response while it
stays under ``BUFFER_LIMIT`` bytes and returns its messages, which the event
loop sends itself. A larger or longer response (a file download) is streamed
from the thread as asgiref does, so memory stays bounded.

The app is still iterated to its end (and its response closed) in the one
thread that ran it, where Django's per-thread database connection lives.
"""

from __future__ import annotations

from concurrent.futures import Executor

from asgiref.sync import sync_to_async
from asgiref.wsgi import WsgiToAsgiInstance

#: Responses up to this size go back to the event loop whole; beyond it they stream from the thread.
BUFFER_LIMIT = 256 * 1024

BAD_REQUEST = [
    {"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]},
    {"type": "http.response.body", "body": b"Bad Request: Too many duplicate headers"},
]


class BufferedWsgiInstance(WsgiToAsgiInstance):
    """One request through the WSGI app on ``executor``; subclasses set it."""

    executor: Executor

    async def __call__(self, scope, receive, send):
        self.send = send
        await super().__call__(scope, receive, send)

    async def run_wsgi_app(self, body):
        messages = await sync_to_async(self.answer, thread_sensitive=False, executor=self.executor)(body)
        for message in messages:
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
