#!/usr/bin/env python
"""Concurrent API appends: rows/s, p50, p99 and server CPU per request at 1, 4, 16 and 64 clients.

Run from the repo root with the project's venv::

    .venv/bin/python bench/concurrency.py                       # SQLite, 1/4/16/64 clients, 3 s each
    .venv/bin/python bench/concurrency.py --seconds 10 --workers 4
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/chartr_bench .venv/bin/python bench/concurrency.py
    .venv/bin/python bench/concurrency.py --smoke               # seconds; only proves it runs

Each client is a thread with its own keep-alive connection that POSTs
1-item appends back to back for ``--seconds``: an ``httpx.Client`` by default,
or with ``--client raw`` a bare socket (bench/lean_http.py), about a tenth of
httpx's CPU per request, which leaves a small machine's cores to the server:
the two show how much of a case's rate is the bench client's own limit (all
client threads share this process's GIL); ``separate`` gives every client
its own agent, ``shared`` puts them all on one agent. The server is gunicorn
with ``--workers`` uvicorn workers on a scratch database (SQLite, or
PostgreSQL when DATABASE_URL points at it). Server CPU is the user + system
time of every process in the server's process group (``/proc/<pid>/stat``)
over the case, divided by the requests answered; client CPU is this process's
own (``time.process_time``), the same way. "cores" is that CPU over the case's
wall time: a one-worker server cannot use much more than one (its GIL), and
the clients run in this process on the same cores. Nothing here is a test: no
figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench.common import create_agents, new_item, percentile, prepare_environment, setup_django  # noqa: E402
from bench.lean_http import CLIENT_KINDS, http_client  # noqa: E402
from tests.support.processes import GUNICORN, Server  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU of every live process in process group ``pgid``."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:  # field 5 of stat, the process group
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def run_case(server: Server, token: str, agents: list[str], seconds: float, client_kind: str = "httpx") -> dict:
    latencies: list[list[float]] = [[] for _ in agents]
    failures: list[str] = []
    start = threading.Barrier(len(agents) + 1)
    bodies = [json.dumps({"items": [{"item": new_item(n)}]}).encode() for n in range(64)]

    def client(index: int, agent_id: str) -> None:
        path = f"/api/v1/agents/{agent_id}/timeline"
        with http_client(client_kind, server.base_url, token) as http:
            start.wait()
            deadline = time.perf_counter() + seconds
            n = 0
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                status, answer = http.post(path, bodies[n % len(bodies)])
                if status not in (200, 201):
                    failures.append(f"{status} {answer[:200]!r}")
                    return
                latencies[index].append((time.perf_counter() - began) * 1000)
                n += 1

    threads = [threading.Thread(target=client, args=(i, a), daemon=True) for i, a in enumerate(agents)]
    for thread in threads:
        thread.start()
    cpu_before = group_cpu_seconds(server.process.pid)
    start.wait()
    began, client_cpu_before = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    client_cpu = time.process_time() - client_cpu_before
    cpu = group_cpu_seconds(server.process.pid) - cpu_before
    if failures:
        raise RuntimeError(f"{len(failures)} failed requests, first: {failures[0]}")
    samples = [ms for per_client in latencies for ms in per_client]
    return {
        "rows_per_s": len(samples) / elapsed,
        "p50": percentile(samples, 50),
        "p99": percentile(samples, 99),
        "cpu_ms": cpu * 1000 / max(len(samples), 1),
        "client_cpu_ms": client_cpu * 1000 / max(len(samples), 1),
        "server_cores": cpu / elapsed,
        "client_cores": client_cpu / elapsed,
        "requests": len(samples),
    }


def run_cases(server: Server, token: str, client_counts: list[int], seconds: float, client: str) -> list[dict]:
    """Each client count on separate agents, then on one shared agent; each line next to the first case."""
    baseline = None
    results: list[dict] = []
    for clients in client_counts:
        for mode in ("separate", "shared"):
            agents = [f"conc-{i}" for i in range(clients)] if mode == "separate" else ["conc-shared"] * clients
            result = run_case(server, token, agents, seconds, client)
            baseline = baseline or result
            results.append({"clients": clients, "mode": mode, **result})
            print(
                f"{clients:>3} clients {mode:<8}  {result['rows_per_s']:8.1f} rows/s  "
                f"p50 {result['p50']:8.1f} ms  p99 {result['p99']:8.1f} ms  "
                f"server CPU {result['cpu_ms']:6.2f} ms/request ({result['server_cores']:.2f} cores)  "
                f"client CPU {result['client_cpu_ms']:5.2f} ms/request ({result['client_cores']:.2f} cores)  "
                f"(x{result['rows_per_s'] / baseline['rows_per_s']:.2f} the 1-client rate, "
                f"p99 x{result['p99'] / baseline['p50']:.1f} its p50)",
                flush=True,
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--seconds", type=float, default=3.0, help="per case")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--client", choices=CLIENT_KINDS, default="httpx", help="httpx, or a bare socket with prebuilt requests"
    )
    parser.add_argument("--smoke", action="store_true", help="1 and 2 clients, 0.5 s each")
    parser.add_argument("--json", type=Path, help="also write every case's figures to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.seconds = [1, 2], 0.5

    root = Path(tempfile.mkdtemp(prefix="chartr-bench-concurrency-"))
    environment = prepare_environment(root)
    server: Server | None = None
    try:
        setup_django()
        most = max(args.clients)
        create_agents([f"conc-{i}" for i in range(most)] + ["conc-shared"])
        from django.db import connections

        from tokens.services import create_api_token

        _, token = create_api_token(name="bench")
        connections.close_all()
        command = [sys.executable, *GUNICORN]
        command[command.index("-w") + 1] = str(args.workers)
        server = Server(environment.env, root / "server.log", command=command).start()
        print(
            f"chartr concurrency benchmark: backend={environment.backend} workers={args.workers} client={args.client} "
            f"seconds={args.seconds} cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        run_case(server, token, ["conc-shared"], min(args.seconds, 1.0), args.client)  # warm the pools and connections
        results = run_cases(server, token, args.clients, args.seconds, args.client)
        print(f"done, load={os.getloadavg()[0]:.2f}", flush=True)
        if args.json:
            args.json.write_text(json.dumps({"backend": environment.backend, "cases": results}, indent=1))
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
