#!/usr/bin/env python
"""Open SSE streams in one worker: its thread count, its RSS, and how fast one append reaches the last subscriber.

Run from the repo root with the project's venv::

    .venv/bin/python bench/streams.py                      # 1,000 streams on one agent, a minute or two
    .venv/bin/python bench/streams.py --streams 10000      # the issue's scale (raise `ulimit -n` first)
    .venv/bin/python bench/streams.py --smoke              # 5 streams; only proves it runs

One gunicorn + uvicorn worker on a scratch database (SQLite, or PostgreSQL when
DATABASE_URL points at it). The worker's ``Threads`` and ``VmRSS`` come from
``/proc/<pid>/status``: idle, with N streams open, and a few seconds after they
closed. Delivery: the time from just before a 1-item POST until the last of the
N subscribers has its ``committed`` event, p50/p99 over ``--appends`` appends.
The clients are raw asyncio sockets in this process, on the same cores.
Nothing here is a test: no figure is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench.timeline_bench import create_agents, percentile, prepare_environment, setup_django  # noqa: E402
from tests.support.processes import Server  # noqa: E402

AGENT = "bench-streams"


def worker_pid(master_pid: int) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise RuntimeError("no gunicorn worker")


def proc_status(pid: int) -> tuple[int, float]:
    """(threads, RSS in MiB) of ``pid``."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024


class Subscriber:
    """One raw HTTP/1.1 SSE connection, stamping the arrival time of every committed seq."""

    def __init__(self):
        self.arrivals: dict[int, float] = {}
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task | None = None

    async def open(self, port: int, token: str, after_seq: int) -> None:
        reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        self.writer.write(
            f"GET /api/v1/agents/{AGENT}/timeline/stream?after_seq={after_seq} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        await self.writer.drain()
        status = await asyncio.wait_for(reader.readline(), 60)
        if b" 200 " not in status:
            raise RuntimeError(f"stream answered {status!r}")
        while b"event:" not in await asyncio.wait_for(reader.readline(), 60):
            pass
        self.task = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        event, event_id = b"", None
        while line := await reader.readline():
            line = line.rstrip(b"\r\n")
            if line.startswith(b"event:"):
                event = line[6:].strip()
            elif line.startswith(b"id:"):
                event_id = line[3:].strip()
            elif line == b"" and event == b"committed" and event_id is not None:
                self.arrivals.setdefault(int(event_id), time.perf_counter())
                event, event_id = b"", None

    async def close(self) -> None:
        if self.task:
            self.task.cancel()
        if self.writer:
            self.writer.close()


async def post_item(port: int, token: str, n: int) -> int:
    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        response = await client.post(
            f"/api/v1/agents/{AGENT}/timeline",
            json={"items": [{"item": {"type": "assistant_message", "text": f"stream bench {n}"}}]},
            headers={"Authorization": f"Bearer {token}"},
        )
        return response.json()["rows"][0]["seq"]


async def run(server: Server, token: str, streams: int, appends: int) -> dict:
    pid = worker_pid(server.process.pid)
    await post_item(server.port, token, -1)  # warm the API path and its pool
    idle = proc_status(pid)
    subscribers = [Subscriber() for _ in range(streams)]
    opening = time.perf_counter()
    for start in range(0, streams, 100):
        await asyncio.gather(*(s.open(server.port, token, 1) for s in subscribers[start : start + 100]))
    opened_s = time.perf_counter() - opening
    open_status = proc_status(pid)
    last_ms = []
    for n in range(appends + 1):
        started = time.perf_counter()
        seq = await post_item(server.port, token, n)
        deadline = started + 60
        while not all(seq in s.arrivals for s in subscribers):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"seq {seq} did not reach every subscriber within 60 s")
            await asyncio.sleep(0.001)
        if n:  # the first append only proves every stream is live
            last_ms.append((max(s.arrivals[seq] for s in subscribers) - started) * 1000)
    await asyncio.gather(*(s.close() for s in subscribers))
    await asyncio.sleep(3)
    closed = proc_status(pid)
    return {"idle": idle, "open": open_status, "closed": closed, "opened_s": opened_s, "last_ms": last_ms}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="5 streams, 2 appends")
    args = parser.parse_args(argv)
    if args.smoke:
        args.streams, args.appends = 5, 2

    root = Path(tempfile.mkdtemp(prefix="chartr-bench-streams-"))
    environment = prepare_environment(root)
    server: Server | None = None
    try:
        setup_django()
        create_agents([AGENT])
        from django.db import connections

        from tokens.services import create_api_token

        _, token = create_api_token(name="bench")
        connections.close_all()
        server = Server(environment.env, root / "server.log", command="gunicorn").start()
        print(
            f"chartr streams benchmark: streams={args.streams} backend={environment.backend} "
            f"cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        result = asyncio.run(run(server, token, args.streams, args.appends))
        for phase in ("idle", "open", "closed"):
            threads, rss = result[phase]
            print(f"worker {phase:<7} threads {threads:>6}   rss {rss:8.1f} MiB", flush=True)
        grown = result["open"][0] - result["idle"][0]
        print(f"threads per open stream  {grown / args.streams:.3f}   (grew by {grown} for {args.streams})")
        print(f"rss per open stream      {(result['open'][1] - result['idle'][1]) * 1024 / args.streams:.1f} KiB")
        print(f"rss still held after close {result['closed'][1] - result['idle'][1]:.1f} MiB")
        last = result["last_ms"]
        print(
            f"delivery to the last of {args.streams}  p50 {percentile(last, 50):.1f} ms  "
            f"p99 {percentile(last, 99):.1f} ms  ({len(last)} appends; opened in {result['opened_s']:.1f} s)"
        )
        print(f"done, load={os.getloadavg()[0]:.2f}", flush=True)
        return 0
    finally:
        if server is not None:
            server.stop()
        from django.db import connections

        connections.close_all()
        environment.database.drop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
