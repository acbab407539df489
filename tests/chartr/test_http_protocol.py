"""chartr/http_protocol.py: a response's head and body reach the socket in one write."""

from __future__ import annotations

import asyncio

from uvicorn.config import Config
from uvicorn.server import ServerState

from chartr.http_protocol import OneWriteHttpToolsProtocol


class RecordingTransport:
    """What uvicorn's protocol uses of a transport, recording writes and the close in order."""

    def __init__(self):
        self.events: list[bytes | str] = []
        self.closing = False

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def write(self, data: bytes) -> None:
        self.events.append(bytes(data))

    def close(self) -> None:
        self.events.append("close")
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def serve(app, request: bytes) -> list[bytes | str]:
    async def run() -> list[bytes | str]:
        config = Config(app=app, lifespan="off", access_log=False, log_config=None)
        config.load()
        state = ServerState()
        protocol = OneWriteHttpToolsProtocol(
            config=config, server_state=state, app_state={}, _loop=asyncio.get_running_loop()
        )
        transport = RecordingTransport()
        protocol.connection_made(transport)
        protocol.data_received(request)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if not state.tasks:
                break
        protocol.connection_lost(None)
        return transport.events

    return asyncio.run(run())


GET = b"GET /api/v1/projects HTTP/1.1\r\nHost: x\r\n\r\n"


def test_a_response_sent_in_one_step_is_one_write():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    events = serve(app, GET)
    writes = [event for event in events if event != "close"]
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and writes[0].endswith(b"\r\n\r\nok")


def test_frames_sent_apart_are_written_apart_and_a_close_comes_after_the_last_write():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"connection", b"close")]})
        await send({"type": "http.response.body", "body": b"one", "more_body": True})
        await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"two", "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    events = serve(app, GET)
    head_and_one, two_and_end, close = events[:3]
    assert head_and_one.startswith(b"HTTP/1.1 200 OK\r\n") and head_and_one.endswith(b"3\r\none\r\n")
    assert two_and_end == b"3\r\ntwo\r\n0\r\n\r\n"
    assert close == "close"
