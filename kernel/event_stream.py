"""A streaming response whose frames an ASGI handler may send without Django's per-part layers.

``StreamingHttpResponse`` under ASGI hands every part through three async
generators (the response's ``__aiter__``, its ``streaming_content`` wrapper
and the handler's ``aclosing``), ``make_bytes`` and ``chunk_bytes`` before it
reaches ``send``. For a live stream fanned out to a thousand subscribers that
was a good part of an event's cost. ``chartr.serving.StreamApplication``
sends an ``EventStreamResponse``'s frames itself, one ``send`` per frame; any
other handler (the test client, plain Django) iterates it as the streaming
response it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from django.http import StreamingHttpResponse


class EventStreamResponse(StreamingHttpResponse):
    """``text/event-stream`` from an async iterator of ready-encoded frames (``bytes``)."""

    def __init__(self, frames: AsyncIterator[bytes], **kwargs):
        kwargs.setdefault("content_type", "text/event-stream; charset=utf-8")
        super().__init__(frames, **kwargs)
        #: The frames as the view made them; None once something replaced the
        #: content (a middleware wrapping it must see every part).
        self.frames: AsyncIterator[bytes] | None = frames

    @property
    def streaming_content(self):
        return StreamingHttpResponse.streaming_content.fget(self)

    @streaming_content.setter
    def streaming_content(self, value) -> None:
        self.frames = None
        StreamingHttpResponse.streaming_content.fset(self, value)
