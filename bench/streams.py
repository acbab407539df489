#!/usr/bin/env python
"""Open SSE streams in one worker: its thread count, its RSS, and how fast one append reaches the last subscriber.

Run from the repo root with the project's venv::

    .venv/bin/python bench/streams.py                      # 1,000 streams on one agent, a minute or two
    .venv/bin/python bench/streams.py --streams 10000      # the issue's scale
    .venv/bin/python bench/streams.py --baseline /tmp/main # alternate with another checkout's server
    .venv/bin/python bench/streams.py --smoke              # 5 streams; only proves it runs

One gunicorn + uvicorn worker on a scratch database (SQLite, or PostgreSQL when
DATABASE_URL points at it). The worker's ``Threads`` and ``VmRSS`` come from
``/proc/<pid>/status``: idle, with N streams open, 3 s after they closed and 15 s
after (past the worker's heap trim, CHARTR_HEAP_TRIM_SECONDS). Delivery: p50/p99 over ``--appends`` 1-item POSTs of the time until the
last of the N subscribers has the whole ``committed`` frame, counted from the
POST's acknowledgement (0 when it came first), and beside it from just before the POST. Server CPU
per append is the worker's utime+stime over the appends, divided by their number.

The clients are asyncio protocols on raw sockets in this process (no stream
reader, no per-line parsing: one regex over each received chunk), so the
client costs little of the two cores; its own CPU per append is printed too.
The open-file limit is raised to the hard limit here, and the server
inherits it. With ``--baseline PATH`` the server of that checkout (same venv)
and this one's alternate ``--repetitions`` times; each run prints its figures
and the medians close the report. Nothing here is a test: no figure is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench.common import create_agents, percentile, prepare_environment, setup_django  # noqa: E402
from tests.support.processes import GUNICORN, Server  # noqa: E402

AGENT = "bench-streams"
COMMITTED = re.compile(rb"id: (\d+)\nevent: committed\ndata: [^\n]*\n\n")
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def raise_open_file_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


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


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


class Fleet:
    """Counts, per seq, how many subscribers have its whole committed frame; notes when the last one did."""

    def __init__(self, size: int):
        self.size = size
        self.received: dict[int, int] = {}
        self.complete: dict[int, asyncio.Future] = {}

    def expect(self, seq: int) -> asyncio.Future:
        return self.complete.setdefault(seq, asyncio.get_running_loop().create_future())

    def got(self, seq: int) -> None:
        count = self.received[seq] = self.received.get(seq, 0) + 1
        if count == self.size:
            future = self.expect(seq)
            if not future.done():
                future.set_result(time.perf_counter())


class StreamClient(asyncio.Protocol):
    """One raw HTTP/1.1 SSE connection; the first event marks it open, then every committed frame is counted."""

    def __init__(self, request: bytes, fleet: Fleet):
        self.request = request
        self.fleet = fleet
        self.opened = asyncio.get_running_loop().create_future()
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        if not self.opened.done():
            if b"event:" not in buffer or b"\n\n" not in buffer.split(b"event:", 1)[1]:
                self.buffer = buffer
                return
            if b" 200 " not in buffer.split(b"\r\n", 1)[0]:
                self.opened.set_exception(RuntimeError(f"stream answered {buffer[:80]!r}"))
                return
            self.opened.set_result(None)
        end = 0
        for match in COMMITTED.finditer(buffer):
            self.fleet.got(int(match[1]))
            end = match.end()
        # Keep only an unfinished frame (chunk-size lines and keep-alives need no parsing).
        rest = buffer[end:]
        self.buffer = rest[rest.rfind(b"id: ") :] if b"id: " in rest else b""

    def connection_lost(self, exc) -> None:
        if not self.opened.done():
            self.opened.set_exception(RuntimeError(f"stream closed before its first event: {exc}"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def post_item(client, token: str, n: int) -> int:
    response = await client.post(
        f"/api/v1/agents/{AGENT}/timeline",
        json={"items": [{"item": {"type": "assistant_message", "text": f"stream bench {n}"}}]},
        headers={"Authorization": f"Bearer {token}"},
    )
    return response.json()["rows"][0]["seq"]


async def open_streams(port: int, token: str, fleet: Fleet, count: int, batch: int = 200) -> list[StreamClient]:
    loop = asyncio.get_running_loop()
    request = (
        f"GET /api/v1/agents/{AGENT}/timeline/stream?after_seq=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()
    clients: list[StreamClient] = []
    for start in range(0, count, batch):
        made = await asyncio.gather(
            *(
                loop.create_connection(lambda: StreamClient(request, fleet), "127.0.0.1", port)
                for _ in range(min(batch, count - start))
            )
        )
        opened = [protocol for _, protocol in made]
        await asyncio.wait_for(asyncio.gather(*(c.opened for c in opened)), 120)
        clients += opened
    return clients


async def run(server: Server, token: str, streams: int, appends: int, later: float = 15) -> dict:
    import httpx

    pid = worker_pid(server.process.pid)
    fleet = Fleet(streams)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
        await post_item(api, token, -1)  # warm the API path and its pool
        await asyncio.sleep(1)
        idle = proc_status(pid)
        opening = time.perf_counter()
        clients = await open_streams(server.port, token, fleet, streams)
        opened_s = time.perf_counter() - opening
        await asyncio.sleep(1)
        open_status = proc_status(pid)
        from_ack, from_post = [], []
        server_cpu = client_cpu = 0.0
        for n in range(appends + 1):
            cpu_before, client_before = cpu_seconds(pid), time.process_time()
            started = time.perf_counter()
            seq = await post_item(api, token, n)
            acked = time.perf_counter()
            last = await asyncio.wait_for(fleet.expect(seq), 120)
            if n:  # the first append only proves every stream is live
                # The last copy can land before the client has parsed the POST's answer: no wait after it.
                from_ack.append(max(last - acked, 0.0) * 1000)
                from_post.append((last - started) * 1000)
                server_cpu += cpu_seconds(pid) - cpu_before
                client_cpu += time.process_time() - client_before
            await asyncio.sleep(0.2)  # let the worker settle: each append is measured on its own
    for client in clients:
        client.close()
    await asyncio.sleep(3)
    closed = proc_status(pid)
    await asyncio.sleep(later - 3)  # past CHARTR_HEAP_TRIM_SECONDS (10 s) after the last close
    closed_later = proc_status(pid)
    return {
        "idle": idle,
        "open": open_status,
        "closed": closed,
        "closed_later": closed_later,
        "later_s": later,
        "opened_s": opened_s,
        "from_ack": from_ack,
        "from_post": from_post,
        "server_cpu_ms": server_cpu * 1000 / max(appends, 1),
        "client_cpu_ms": client_cpu * 1000 / max(appends, 1),
    }


def server_command(checkout: Path | None) -> str | list[str]:
    """gunicorn serving this checkout, or another one with the same venv (``-P``: no cwd on sys.path)."""
    if checkout is None:
        return "gunicorn"
    return [sys.executable, "-P", *GUNICORN, "--chdir", str(checkout)]


def report(result: dict, streams: int) -> dict:
    for phase in ("idle", "open", "closed"):
        threads, rss = result[phase]
        print(f"worker {phase:<7} threads {threads:>6}   rss {rss:8.1f} MiB", flush=True)
    grown = result["open"][0] - result["idle"][0]
    held, held_later = result["closed"][1] - result["idle"][1], result["closed_later"][1] - result["idle"][1]
    per_stream = (result["open"][1] - result["idle"][1]) * 1024 / streams
    print(f"threads per open stream  {grown / streams:.3f}   (grew by {grown} for {streams})")
    print(f"rss per open stream      {per_stream:.1f} KiB")
    print(f"rss still held after close {held:.1f} MiB   ({result['later_s']:.0f} s after: {held_later:.1f} MiB)")
    ack, post = result["from_ack"], result["from_post"]
    figures = {
        "rss_open": result["open"][1],
        "per_stream_kib": per_stream,
        "held_mib": held,
        "held_later_mib": held_later,
        "p50": percentile(ack, 50),
        "p99": percentile(ack, 99),
        "p50_post": percentile(post, 50),
        "server_cpu_ms": result["server_cpu_ms"],
    }
    print(
        f"delivery to the last of {streams}  p50 {figures['p50']:.1f} ms  p99 {figures['p99']:.1f} ms  "
        f"({len(ack)} appends, from the POST's answer; from before the POST p50 {figures['p50_post']:.1f} ms "
        f"p99 {percentile(post, 99):.1f} ms; opened in {result['opened_s']:.1f} s)"
    )
    print(
        f"worker cpu per append   {result['server_cpu_ms']:.1f} ms   "
        f"(bench client cpu per append {result['client_cpu_ms']:.1f} ms)",
        flush=True,
    )
    return figures


def summarize(figures: dict[str, list[dict]]) -> None:
    print("medians:")
    names = list(figures)
    for key in ("rss_open", "per_stream_kib", "held_mib", "held_later_mib", "p50", "p99", "p50_post", "server_cpu_ms"):
        medians = {name: statistics.median(run[key] for run in runs) for name, runs in figures.items()}
        line = "  ".join(f"{name} {value:8.1f}" for name, value in medians.items())
        ratio = ""
        if len(names) == 2 and medians[names[0]]:
            ratio = f"   {names[1]}/{names[0]} x{medians[names[1]] / medians[names[0]]:.2f}"
        print(f"  {key:<15} {line}{ratio}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--later", type=float, default=15, help="seconds after close of the second RSS reading")
    parser.add_argument("--baseline", type=Path, help="another checkout whose server alternates with this one's")
    parser.add_argument(
        "--deployed-allocator",
        action="store_true",
        help="serve this checkout with PYTHONMALLOC=malloc, as bin/chartr-entrypoint does (not the baseline)",
    )
    parser.add_argument("--smoke", action="store_true", help="5 streams, 2 appends")
    args = parser.parse_args(argv)
    if args.smoke:
        args.streams, args.appends, args.later = 5, 2, 3
    limit = raise_open_file_limit()

    root = Path(tempfile.mkdtemp(prefix="chartr-bench-streams-"))
    environment = prepare_environment(root)
    try:
        setup_django()
        create_agents([AGENT])
        from django.db import connections

        from tokens.services import create_api_token

        _, token = create_api_token(name="bench")
        connections.close_all()
        print(
            f"chartr streams benchmark: streams={args.streams} backend={environment.backend} "
            f"cores={os.cpu_count()} open-file limit={limit} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        sides = [("after", None)]
        if args.baseline is not None:
            sides.insert(0, ("before", args.baseline.resolve()))
        figures: dict[str, list[dict]] = {name: [] for name, _ in sides}
        for repetition in range(args.repetitions):
            for name, checkout in sides:
                print(f"--- {name} ({checkout or 'this checkout'}), run {repetition + 1}", flush=True)
                env = dict(environment.env)
                if checkout is None and args.deployed_allocator:
                    env.setdefault("PYTHONMALLOC", "malloc")  # as bin/chartr-entrypoint starts it
                server = Server(env, root / "server.log", command=server_command(checkout)).start()
                try:
                    result = asyncio.run(run(server, token, args.streams, args.appends, args.later))
                finally:
                    server.stop()
                figures[name].append(report(result, args.streams))
        if args.repetitions > 1 or len(sides) > 1:
            summarize(figures)
        print(f"done, load={os.getloadavg()[0]:.2f}", flush=True)
        return 0
    finally:
        from django.db import connections

        connections.close_all()
        environment.database.drop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
