"""uvicorn's httptools protocol, writing a response's head and body in one write.

uvicorn writes the status line and headers when the app sends
``http.response.start`` and the body when it sends ``http.response.body``: two
``write`` system calls for every small response, each waking the client (on a
virtual machine, waking a thread on another core is costly in itself). The
pooled WSGI path (chartr/pooled_wsgi.py) sends both messages in one step of its
task, so a transport that gathers the writes made in one pass of the event loop
and writes them together at the end of it sends each such response in one write.

Nothing waits longer than that pass: the gathered bytes go out from a callback
scheduled with the first write, before the loop polls for I/O again, and at once
when the transport is closed. A stream's frames, sent one per pass, still go
out one by one as they are sent.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class OnePassTransport:
    """A transport whose writes within one pass of the event loop go out as one write."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self.transport = transport
        self.loop = loop
        self.pending: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        if self.pending is None:
            self.pending = [data]
            self.loop.call_soon(self.flush)
        else:
            self.pending.append(data)

    def writelines(self, chunks) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        pending, self.pending = self.pending, None
        if pending and not self.transport.is_closing():
            self.transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def __getattr__(self, name: str):
        # Everything else (is_closing, pause_reading, get_extra_info, abort, ...) is the transport's own.
        return getattr(self.transport, name)


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` on a ``OnePassTransport`` (flow control stays on the real transport)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = OnePassTransport(transport, self.loop)  # type: ignore[assignment]
