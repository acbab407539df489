"""A worker gives the memory of closed streams back (a real gunicorn + uvicorn worker, real sockets).

The worker's ``VmRSS`` is read from ``/proc/<pid>/status`` once a round of
streams has come and gone (so one-off caches and pools are warm), then with
a few thousand streams open, then after they closed. Before the heap was
handed back, about 40 KiB per stream stayed with the process for good: with
2,000 streams, some 70 MiB, against a bound here of half of what the
streams took while open. Python's own small-object allocator keeps its arenas
while any object in them lives, so the worker runs as ``bin/chartr-entrypoint``
starts it, with ``PYTHONMALLOC=malloc``: measured here, about a third of what
the streams took stays (glibc pages still holding a live object each).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.process.live_support import ServerProcess
from tests.process.test_stream_threads import close_streams, open_streams, worker_pid
from tests.support.processes import wait_for

pytestmark = [
    pytest.mark.process,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

STREAMS = 2000
WARM_UP_STREAMS = 200
#: The share of the open streams' memory that may stay after they closed.
KEPT_SHARE = 0.5
#: How long the worker gets to end the streams and trim its heap (it trims 1 s after the last ends).
RETURN_TIMEOUT = 60


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS line for {pid}")


def test_a_worker_gives_back_the_memory_of_closed_streams(tmp_path, scratch_db):
    server = ServerProcess(
        tmp_path,
        database=scratch_db(migrated=True),
        # As bin/chartr-entrypoint runs it: the interpreter allocating through glibc, whose free pages the worker trims.
        env={"CHARTR_HEAP_TRIM_SECONDS": "1", "PYTHONMALLOC": "malloc"},
    )
    setup = server.setup(["memory-agent"])
    path = f"/api/v1/agents/{setup['agents'][0]}/timeline/stream"
    with server:
        pid = worker_pid(server.process.pid)

        async def round_of(count: int) -> tuple[int, int]:
            streams = await open_streams(server.port, path, setup["token"], count)
            during = rss_kib(pid)
            await close_streams(streams)
            return during, len(streams)

        asyncio.run(round_of(WARM_UP_STREAMS))
        before = settle(pid)
        during, opened = asyncio.run(round_of(STREAMS))
        bound = before + KEPT_SHARE * (during - before)
        readings = [rss_kib(pid)]

        def given_back() -> bool:
            readings.append(rss_kib(pid))
            return readings[-1] <= bound

        try:
            wait_for(given_back, timeout=RETURN_TIMEOUT, what="the worker's RSS to come down", interval=0.5)
        except AssertionError:
            pass

    assert opened == STREAMS
    assert during > before, (before, during)
    assert readings[-1] <= bound, (
        f"RSS {before} KiB before, {during} KiB with {STREAMS} streams open, "
        f"still {readings[-1]} KiB {RETURN_TIMEOUT} s after they closed (bound {bound:.0f} KiB)"
    )


def settle(pid: int) -> int:
    """The worker's RSS once it stopped falling (its heap is trimmed a moment after the streams end)."""
    readings = [rss_kib(pid)]

    def steady() -> bool:
        readings.append(rss_kib(pid))
        return len(readings) > 10 and readings[-1] >= readings[-10]

    wait_for(steady, timeout=60, what="the worker's RSS to settle", interval=0.5)
    return readings[-1]
