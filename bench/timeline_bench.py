#!/usr/bin/env python
"""Timeline benchmark: chartr's append and read paths next to a raw baseline.

Run from the repo root with the project's venv::

    .venv/bin/python bench/timeline_bench.py            # default, a few minutes
    .venv/bin/python bench/timeline_bench.py --quick    # fewer samples, same sizes
    .venv/bin/python bench/timeline_bench.py --smoke    # seconds; only proves it runs

Every case is measured next to a raw baseline doing the same database work
in the same run (raw ``sqlite3``, or raw ``psycopg`` when DATABASE_URL points
at PostgreSQL), with the two sides interleaved so that noise from other
processes on the machine hits both. Each line ends with ``cost xN``: how many
times the raw baseline's cost chartr pays (raw rate / chartr rate for
throughput, chartr latency / raw latency for reads).

The API lines go through httpx by default; ``--client raw`` sends the same
requests through a bare socket (bench/lean_http.py), whose own CPU per request
is about a tenth of httpx's, so the figure is closer to the server's own cost.

Everything lives in a temp dir (data dir, config dir, the SQLite file with the
seeded 1M-row timeline) that is removed at the end; the server is a real
gunicorn + uvicorn worker process on 127.0.0.1 and a port the kernel picks.
Nothing here is a test: no figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The server launcher and scratch databases are the test suite's own (tests/support/processes.py).
sys.path.insert(0, str(REPO_ROOT))
from bench.common import (  # noqa: E402
    Report,
    Result,
    alternate,
    create_agents,
    drop_scratch_database,
    human_count,
    interleaved_latency,
    new_item,
    prepare_environment,
    setup_django,
)
from bench.delivery import bench_delivery  # noqa: E402
from bench.lean_http import CLIENT_KINDS, http_client  # noqa: E402
from bench.raw_store import RawStore  # noqa: E402
from kernel.engines import for_engine  # noqa: E402
from tests.support.processes import Server  # noqa: E402

READ_LIMIT = 100
BATCH_SIZE = 100
DIRECTIONS = ("tail", "before", "after")


@dataclass(frozen=True)
class Profile:
    service_appends: int
    api_single_appends: int
    api_batch_calls: int
    read_samples: int
    small_rows: int
    large_rows: int
    subscribers: int
    delivery_appends: int
    #: Each throughput case alternates raw and chartr this many times.
    passes: int


PROFILES = {
    "default": Profile(
        service_appends=3000,
        api_single_appends=1000,
        api_batch_calls=60,
        read_samples=200,
        small_rows=1_000,
        large_rows=1_000_000,
        subscribers=100,
        delivery_appends=30,
        passes=3,
    ),
    "quick": Profile(
        service_appends=1000,
        api_single_appends=300,
        api_batch_calls=20,
        read_samples=100,
        small_rows=1_000,
        large_rows=1_000_000,
        subscribers=100,
        delivery_appends=10,
        passes=2,
    ),
    # Only proves the whole path still runs; its figures mean nothing.
    "smoke": Profile(
        service_appends=20,
        api_single_appends=10,
        api_batch_calls=2,
        read_samples=10,
        small_rows=1_000,
        large_rows=3_000,
        subscribers=3,
        delivery_appends=2,
        passes=1,
    ),
}


def read_seq(direction: str, rows: int) -> int | None:
    """The cursor for a read in the middle of the history (tail needs none)."""
    return None if direction == "tail" else rows // 2


# --- the cases ------------------------------------------------------------


def bench_service_appends(report: Report, raw: RawStore, profile: Profile) -> None:
    from timeline.services import NewTimelineItem, append_timeline_items

    raw_s, chartr_s, calls = alternate(
        profile.passes,
        profile.service_appends,
        lambda n: raw.append("raw-service", [new_item(n)]),
        lambda n: append_timeline_items(agent_id="bench-service", items=[NewTimelineItem(item=new_item(n))]),
    )
    report.rate("append service 1 item/call", calls, chartr_s, calls, raw_s)
    assert raw.head("bench-service") == calls, "service appends lost rows"


def bench_selector_reads(report: Report, raw: RawStore, profile: Profile, sizes: dict[str, int]) -> None:
    from timeline.selectors import read_timeline

    by_size: dict[tuple[str, str], Result] = {}
    for label, (agent_id, rows) in sizes.items():
        for direction in DIRECTIONS:
            seq = read_seq(direction, rows)

            def chartr_read(agent_id=agent_id, direction=direction, seq=seq):
                page = read_timeline(agent_id=agent_id, direction=direction, seq=seq, limit=READ_LIMIT)
                assert len(page.rows) == READ_LIMIT

            raw_ms, chartr_ms = interleaved_latency(
                profile.read_samples,
                lambda agent_id=agent_id, direction=direction, seq=seq: raw.read(agent_id, direction, seq, READ_LIMIT),
                chartr_read,
            )
            by_size[(direction, label)] = report.latency(f"read selector {direction} @{label}", chartr_ms, raw_ms)
    print_size_growth(by_size, "selector", sizes)
    label, (agent_id, rows) = list(sizes.items())[-1]
    print_read_plans(agent_id, rows, label)


def print_read_plans(agent_id: str, rows: int, label: str) -> None:
    """EXPLAIN the row query the selector really sends, so "O(limit)" can be checked, not just timed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from timeline.selectors import read_timeline

    explain = for_engine(connection, {"sqlite": "EXPLAIN QUERY PLAN ", "postgresql": "EXPLAIN "})
    for direction in DIRECTIONS:
        with CaptureQueriesContext(connection) as captured:
            read_timeline(agent_id=agent_id, direction=direction, seq=read_seq(direction, rows), limit=READ_LIMIT)
        (row_query,) = [q["sql"] for q in captured.captured_queries if "timeline_timelinerow" in q["sql"]]
        with connection.cursor() as cursor:
            cursor.execute(explain + row_query)
            plan = " | ".join(str(line[-1]).strip() for line in cursor.fetchall())
        print(f"{'':<34} plan selector {direction} @{label}: {plan}", flush=True)


def print_size_growth(by_size: dict[tuple[str, str], Result], path: str, sizes: dict[str, int]) -> None:
    small, large = list(sizes)
    for direction in DIRECTIONS:
        growth = by_size[(direction, large)].chartr["p50_ms"] / by_size[(direction, small)].chartr["p50_ms"]
        print(f"{'':<34} {path} {direction}: p50 @{large} / @{small} = x{growth:.2f}", flush=True)


def bench_api_appends(report: Report, raw: RawStore, profile: Profile, client) -> None:
    def post(agent_id: str, items: list[dict]) -> None:
        body = json.dumps({"items": [{"item": item} for item in items]}).encode()
        status, answer = client.post(f"/api/v1/agents/{agent_id}/timeline", body)
        if status != 201:
            raise RuntimeError(f"append answered {status}: {answer[:500]!r}")

    raw_s, chartr_s, calls = alternate(
        profile.passes,
        profile.api_single_appends,
        lambda n: raw.append("raw-api-1", [new_item(n)]),
        lambda n: post("bench-api-1", [new_item(n)]),
    )
    report.rate("append api 1 item/call", calls, chartr_s, calls, raw_s)

    def batch(n: int) -> list[dict]:
        return [new_item(n * BATCH_SIZE + i) for i in range(BATCH_SIZE)]

    raw_s, chartr_s, calls = alternate(
        profile.passes,
        profile.api_batch_calls,
        lambda n: raw.append("raw-api-100", batch(n)),
        lambda n: post("bench-api-100", batch(n)),
    )
    report.rate(f"append api {BATCH_SIZE} items/call", calls * BATCH_SIZE, chartr_s, calls * BATCH_SIZE, raw_s)
    assert raw.head("bench-api-100") == calls * BATCH_SIZE, "API batch appends lost rows"


def bench_api_reads(report: Report, raw: RawStore, profile: Profile, client, sizes: dict[str, int]) -> None:
    by_size: dict[tuple[str, str], Result] = {}
    for label, (agent_id, rows) in sizes.items():
        for direction in DIRECTIONS:
            params = {"direction": direction, "limit": READ_LIMIT}
            seq = read_seq(direction, rows)
            if seq is not None:
                params["seq"] = seq

            def chartr_read(agent_id=agent_id, params=params):
                status, answer = client.get(f"/api/v1/agents/{agent_id}/timeline", params)
                if status != 200:
                    raise RuntimeError(f"read answered {status}: {answer[:500]!r}")
                assert len(json.loads(answer)["rows"]) == READ_LIMIT

            raw_ms, chartr_ms = interleaved_latency(
                profile.read_samples,
                lambda agent_id=agent_id, direction=direction, seq=seq: raw.read(agent_id, direction, seq, READ_LIMIT),
                chartr_read,
            )
            by_size[(direction, label)] = report.latency(f"read api {direction} @{label}", chartr_ms, raw_ms)
    print_size_growth(by_size, "api", sizes)


# --- main -----------------------------------------------------------------


AGENTS = (
    "bench-service",
    "raw-service",
    "bench-api-1",
    "raw-api-1",
    "bench-api-100",
    "raw-api-100",
    "bench-read-small",
    "bench-read-large",
    "bench-delivery",
    "raw-delivery",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="profile", const="quick", help="fewer samples")
    mode.add_argument("--smoke", action="store_const", dest="profile", const="smoke", help="seconds; proves it runs")
    parser.add_argument("--large-rows", type=int, help="rows in the large timeline (default 1,000,000)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (prints its path)")
    parser.add_argument(
        "--client",
        choices=CLIENT_KINDS,
        default="httpx",
        help="the API lines' HTTP client: httpx, or a bare socket with far less CPU per request (bench/lean_http.py)",
    )
    return parser.parse_args(argv)


def seed(raw: RawStore, reads: dict[str, tuple[str, int]]) -> None:
    for agent_id, rows in reads.values():
        seeding = time.perf_counter()
        raw.seed(agent_id, rows)
        print(f"seeded {rows:,} rows in {time.perf_counter() - seeding:.1f} s", flush=True)


def run_cases(args: argparse.Namespace, profile: Profile, environment, root: Path, report: Report) -> None:
    """Every case in order; the server is started after the in-process ones and stopped at the end."""
    from django.db import connection

    from tokens.services import create_api_token

    reads = {
        human_count(profile.small_rows): ("bench-read-small", profile.small_rows),
        human_count(profile.large_rows): ("bench-read-large", profile.large_rows),
    }
    create_agents(AGENTS)
    _, token = create_api_token(name="bench")
    raw = RawStore(environment)
    server: Server | None = None
    try:
        seed(raw, reads)
        bench_service_appends(report, raw, profile)
        bench_selector_reads(report, raw, profile, reads)
        connection.close()
        # gunicorn with one uvicorn worker on 127.0.0.1 and a port the kernel picks.
        server = Server(environment.env, root / "server.log", command="gunicorn").start()
        with http_client(args.client, server.base_url, token) as client:
            bench_api_appends(report, raw, profile, client)
            bench_api_reads(report, raw, profile, client, reads)
        bench_delivery(report, raw, server, token, profile.subscribers, profile.delivery_appends)
    finally:
        if server is not None:
            server.stop()
        raw.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profile = PROFILES[args.profile or "default"]
    if args.large_rows:
        profile = Profile(**{**profile.__dict__, "large_rows": args.large_rows})
    root = Path(tempfile.mkdtemp(prefix="chartr-bench-"))
    environment = prepare_environment(root)
    started = time.monotonic()
    try:
        setup_django()
        report = Report(backend=environment.backend)
        print(
            f"chartr timeline benchmark: profile={args.profile or 'default'} backend={environment.backend} "
            f"baseline={'raw sqlite3' if environment.backend == 'sqlite' else 'raw psycopg'} "
            f"api-client={args.client} cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        run_cases(args, profile, environment, root, report)
        print(f"done in {time.monotonic() - started:.0f} s, load={os.getloadavg()[0]:.2f}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(report.as_json(), indent=2, default=str))
        return 0
    finally:
        if environment.backend == "postgresql":
            from django.db import connections

            connections.close_all()
        drop_scratch_database(environment)
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
