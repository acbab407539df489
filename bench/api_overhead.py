#!/usr/bin/env python
"""What an API request costs the server beyond the service call it makes.

Run from the repo root with the project's venv::

    .venv/bin/python bench/api_overhead.py                 # SQLite
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chartr_bench .venv/bin/python bench/api_overhead.py
    .venv/bin/python bench/api_overhead.py --smoke         # seconds; only proves it runs

Two cases, each alternating in chunks between its two sides, median of the
repetitions:

* ``append 1 item``: the server's CPU per ``POST /api/v1/agents/{id}/timeline``
  with one item, next to the CPU of ``append_timeline_items`` with one item
  called in this process on the same database;
* ``read 100 rows``: the server's CPU per ``GET …/timeline?limit=100``, next to
  ``read_timeline(limit=100)`` in this process.

Server CPU is the user + system time of the server's process group
(``/proc/<pid>/stat``, as ``bench/concurrency.py`` reads it) over a chunk of
sequential requests from one keep-alive client, divided by the requests. The
in-process side is ``time.process_time``. ``cost xN`` is server CPU per request
over the service call's CPU. Nothing here is a test: no figure is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench.common import create_agents, new_item, prepare_environment, setup_django  # noqa: E402
from bench.concurrency import group_cpu_seconds  # noqa: E402
from tests.support.processes import Server  # noqa: E402


def server_cpu_ms(server: Server, call: Callable[[int], None], calls: int) -> float:
    before = group_cpu_seconds(server.process.pid)
    for n in range(calls):
        call(n)
    return (group_cpu_seconds(server.process.pid) - before) * 1000 / calls


def local_cpu_ms(call: Callable[[int], None], calls: int) -> float:
    before = time.process_time()
    for n in range(calls):
        call(n)
    return (time.process_time() - before) * 1000 / calls


def build_cases(http) -> list[tuple[str, Callable[[int], None], Callable[[int], None]]]:
    """(case, the API call, the service call doing the same work in-process)."""
    from timeline.selectors import read_timeline
    from timeline.services import NewTimelineItem, append_timeline_items

    def api_append(n: int) -> None:
        response = http.post("/api/v1/agents/api-append/timeline", json={"items": [{"item": new_item(n)}]})
        assert response.status_code == 201, response.text[:300]

    def service_append(n: int) -> None:
        append_timeline_items(agent_id="service-append", items=[NewTimelineItem(item=new_item(n))])

    def api_read(n: int) -> None:
        response = http.get("/api/v1/agents/reads/timeline", params={"limit": 100})
        assert response.status_code == 200, response.text[:300]

    def service_read(n: int) -> None:
        read_timeline(agent_id="reads", limit=100)

    return [("append 1 item", api_append, service_append), ("read 100 rows", api_read, service_read)]


def measure(server: Server, cases, repetitions: int, chunk: int) -> None:
    for _, api_call, service_call in cases:  # warm both sides
        server_cpu_ms(server, api_call, 20)
        local_cpu_ms(service_call, 20)
    for case, api_call, service_call in cases:
        api_ms, service_ms = [], []
        for _ in range(repetitions):
            api_ms.append(server_cpu_ms(server, api_call, chunk))
            service_ms.append(local_cpu_ms(service_call, chunk))
        ratios = [a / s for a, s in zip(api_ms, service_ms, strict=True)]
        print(
            f"{case:<15} server CPU/request {statistics.median(api_ms):6.2f} ms   "
            f"service CPU/call {statistics.median(service_ms):6.2f} ms   "
            f"cost x{statistics.median(ratios):.2f} (spread x{min(ratios):.2f}-x{max(ratios):.2f})",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=200, help="calls per side per repetition")
    parser.add_argument("--smoke", action="store_true", help="2 x 10 calls")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repetitions, args.chunk = 2, 10

    root = Path(tempfile.mkdtemp(prefix="chartr-bench-overhead-"))
    environment = prepare_environment(root)
    server: Server | None = None
    try:
        setup_django()
        import httpx
        from django.db import connections

        from timeline.services import NewTimelineItem, append_timeline_items
        from tokens.services import create_api_token

        create_agents(["api-append", "service-append", "reads"])
        append_timeline_items(agent_id="reads", items=[NewTimelineItem(item=new_item(n)) for n in range(200)])
        _, token = create_api_token(name="bench")
        connections.close_all()
        server = Server(environment.env, root / "server.log", command="gunicorn").start()
        print(
            f"chartr API overhead benchmark: backend={environment.backend} cores={os.cpu_count()} "
            f"load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            measure(server, build_cases(http), args.repetitions, args.chunk)
        print(f"done, load={os.getloadavg()[0]:.2f}")
    finally:
        if server is not None:
            server.stop()
        environment.database.drop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
