"""Open SSE streams cost a worker no thread each (a real gunicorn + uvicorn worker, real sockets).

The worker's thread count is read from ``/proc/<pid>/status`` with a few
streams open and again with 200 more: the pools (the sync pool, the live
database pool) are bounded by settings, so the count may grow by at most
their sizes, never by the number of streams. Memory is measured by
bench/streams.py, not asserted here.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.process.live_support import ServerProcess
from tests.support.processes import wait_for

pytestmark = [
    pytest.mark.process,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

LIVE_DB_THREADS = 2
SYNC_THREADS = 2
MORE_STREAMS = 200


def worker_pid(master_pid: int) -> int:
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children")
    return int(wait_for(lambda: children.read_text().split(), timeout=20, what="the gunicorn worker")[0])


def thread_count(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError(f"no Threads line for {pid}")


async def open_stream(port: int, path: str, token: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw HTTP/1.1 SSE request, returned once the stream's first event arrived."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 30)
    assert b" 200 " in status, status
    while b"event:" not in await asyncio.wait_for(reader.readline(), 30):
        pass
    return reader, writer


async def open_streams(port: int, path: str, token: str, count: int) -> list:
    # Batches, so the listen backlog of a loaded machine is not the thing under test.
    streams = []
    for start in range(0, count, 50):
        streams += await asyncio.gather(*(open_stream(port, path, token) for _ in range(min(50, count - start))))
    return streams


async def close_streams(streams: list) -> None:
    for _, writer in streams:
        writer.close()
    await asyncio.gather(*(writer.wait_closed() for _, writer in streams), return_exceptions=True)


def test_the_thread_count_of_a_worker_does_not_grow_with_open_streams(tmp_path, scratch_db):
    server = ServerProcess(
        tmp_path,
        database=scratch_db(migrated=True),
        env={"CHARTR_LIVE_DB_THREADS": str(LIVE_DB_THREADS), "CHARTR_SYNC_THREADS": str(SYNC_THREADS)},
    )
    setup = server.setup(["threads-agent"])
    path = f"/api/v1/agents/{setup['agents'][0]}/timeline/stream"
    with server:
        pid = worker_pid(server.process.pid)

        async def scenario() -> tuple[int, int, int]:
            first = await open_streams(server.port, path, setup["token"], 10)
            before = thread_count(pid)
            more = await open_streams(server.port, path, setup["token"], MORE_STREAMS)
            during = thread_count(pid)
            await close_streams(first + more)
            return before, during, len(first + more)

        before, during, opened = asyncio.run(scenario())

    assert opened == 10 + MORE_STREAMS
    # At most the pools may still be filling up; a thread per stream would add 200.
    assert during - before <= LIVE_DB_THREADS + SYNC_THREADS, (before, during)
