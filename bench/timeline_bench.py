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
import asyncio
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The server launcher and scratch databases are the test suite's own (tests/support/processes.py).
sys.path.insert(0, str(REPO_ROOT))
from bench.lean_http import CLIENT_KINDS, http_client  # noqa: E402
from tests.support.processes import ScratchDatabase, Server, run_engine  # noqa: E402

READ_LIMIT = 100
BATCH_SIZE = 100
DIRECTIONS = ("tail", "before", "after")
#: A typical streamed chunk: small text, an item id like the ones agents send.
ITEM_TEXT = "The quick brown fox jumps over the lazy dog. " * 4


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
    rounds: int


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
        rounds=3,
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
        rounds=2,
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
        rounds=1,
    ),
}


def human_count(n: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


# --- results and printing -------------------------------------------------


def percentile(samples: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Result:
    case: str
    kind: str  # "rate" (rows/s) or "latency" (ms)
    chartr: dict
    raw: dict
    cost: float
    note: str = ""


@dataclass
class Report:
    backend: str
    results: list[Result] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def rate(self, case: str, chartr_rows: int, chartr_s: float, raw_rows: int, raw_s: float, note: str = "") -> None:
        chartr_rate, raw_rate = chartr_rows / chartr_s, raw_rows / raw_s
        result = Result(
            case, "rate", {"rows_per_s": chartr_rate}, {"rows_per_s": raw_rate}, raw_rate / chartr_rate, note
        )
        self.results.append(result)
        print(
            f"{case:<34} chartr {chartr_rate:>9,.0f} rows/s   raw {raw_rate:>9,.0f} rows/s   "
            f"cost x{result.cost:.1f}{'   ' + note if note else ''}",
            flush=True,
        )

    def latency(self, case: str, chartr_ms: list[float], raw_ms: list[float], note: str = "") -> Result:
        chartr = {"p50_ms": percentile(chartr_ms, 50), "p99_ms": percentile(chartr_ms, 99)}
        raw = {"p50_ms": percentile(raw_ms, 50), "p99_ms": percentile(raw_ms, 99)}
        result = Result(case, "latency", chartr, raw, chartr["p50_ms"] / raw["p50_ms"], note)
        self.results.append(result)
        print(
            f"{case:<34} chartr p50 {chartr['p50_ms']:7.2f} ms p99 {chartr['p99_ms']:7.2f} ms   "
            f"raw p50 {raw['p50_ms']:6.3f} ms p99 {raw['p99_ms']:6.3f} ms   cost x{result.cost:.1f} (p50)"
            f"{'   ' + note if note else ''}",
            flush=True,
        )
        return result

    def skip(self, case: str, reason: str) -> None:
        self.skipped.append((case, reason))
        print(f"{case:<34} skipped: {reason}", flush=True)

    def as_json(self) -> dict:
        return {
            "backend": self.backend,
            "results": [r.__dict__ for r in self.results],
            "skipped": [{"case": c, "reason": r} for c, r in self.skipped],
        }


# --- the environment: temp dirs, database, Django -------------------------


@dataclass
class Environment:
    root: Path
    env: dict[str, str]
    backend: str  # "sqlite" or "postgresql"
    sqlite_path: Path | None
    database: ScratchDatabase


def prepare_environment(root: Path) -> Environment:
    """Point this process (and the server it starts) at throwaway dirs and a scratch database.

    Must run before Django is imported: settings create the data and config
    dirs and pick the database on import.
    """
    env = {
        "CHARTR_DATA_DIR": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "DJANGO_SETTINGS_MODULE": "chartr.settings",
        "CHARTR_LOG_LEVEL": "WARNING",
    }
    os.environ.pop("CHARTR_SECRET_KEY", None)
    # A SQLite file in the data dir, or a uniquely named PostgreSQL database
    # on DATABASE_URL's server, dropped at the end.
    backend = run_engine()
    database = ScratchDatabase(backend, root, purpose="bench").create()
    os.environ.pop("DATABASE_URL", None)
    env.update(database.env())
    os.environ.update(env)
    sqlite_path = database.path if backend == "sqlite" else None
    server_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    server_env.update(env)
    return Environment(root, server_env, backend, sqlite_path, database)


def drop_scratch_database(environment: Environment) -> None:
    environment.database.drop()


def setup_django() -> None:
    sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def create_agents(agent_ids: Iterable[str]) -> None:
    from registry.services import create_project, create_workspace
    from snapshots.services import create_agent

    project = create_project(directory="/srv/bench", kind="git")
    workspace = create_workspace(project=project, directory="/srv/bench/main", kind="checkout")
    for agent_id in agent_ids:
        create_agent(workspace=workspace, provider="bench", agent_id=agent_id, lifecycle="running")


def new_item(n: int) -> dict:
    return {"type": "assistant_message", "text": f"{ITEM_TEXT}{n}"}


# --- the raw baseline -----------------------------------------------------

ROW_COLUMNS = "seq, committed_at, item_type, item, item_id"


class RawStore:
    """The same statements chartr's service and selector run, with no framework in between."""

    def __init__(self, environment: Environment):
        from django.db import connection

        self.backend = environment.backend
        # Django's own adapter gives the stored datetime form (text on
        # SQLite, timestamptz on PostgreSQL), so raw rows read back the same.
        self._adapt_datetime = connection.ops.adapt_datetimefield_value
        if self.backend == "sqlite":
            import sqlite3

            self.conn = sqlite3.connect(str(environment.sqlite_path), isolation_level=None, timeout=20)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._lock_suffix = ""
            self._begin = "BEGIN IMMEDIATE"
        else:
            import psycopg

            self.conn = psycopg.connect(environment.env["DATABASE_URL"], autocommit=True)
            self._lock_suffix = " FOR UPDATE"
            self._begin = "BEGIN"

    def _sql(self, sql: str) -> str:
        return sql.replace("%s", "?") if self.backend == "sqlite" else sql

    def execute(self, sql: str, params: tuple = ()):
        return self.conn.execute(self._sql(sql), params)

    def executemany(self, sql: str, rows: Iterable[tuple]) -> None:
        if self.backend == "sqlite":
            self.conn.executemany(self._sql(sql), rows)
        else:
            with self.conn.cursor() as cursor:
                cursor.executemany(sql, list(rows))

    def now(self):
        from django.utils import timezone

        return self._adapt_datetime(timezone.now())

    def encode_item(self, item: dict):
        if self.backend == "sqlite":
            return json.dumps(item)
        from psycopg.types.json import Jsonb

        return Jsonb(item)

    def decode_item(self, value):
        return json.loads(value) if isinstance(value, str) else value

    def append(self, agent_id: str, items: list[dict]) -> None:
        """BEGIN; lock + read head; insert head+1..; move head; COMMIT."""
        self.execute(self._begin)
        try:
            (head,) = self.execute(
                f"SELECT head_seq FROM snapshots_agentsnapshot WHERE agent_id = %s{self._lock_suffix}", (agent_id,)
            ).fetchone()
            now = self.now()
            rows = [
                (agent_id, head + i + 1, now, item["type"], self.encode_item(item), None)
                for i, item in enumerate(items)
            ]
            sql = (
                "INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id) "
                "VALUES (%s, %s, %s, %s, %s, %s)"
            )
            if len(rows) == 1:
                self.execute(sql, rows[0])
            else:
                self.executemany(sql, rows)
            self.execute(
                "UPDATE snapshots_agentsnapshot SET head_seq = %s WHERE agent_id = %s", (head + len(items), agent_id)
            )
            self.execute("COMMIT")
        except BaseException:
            self.execute("ROLLBACK")
            raise

    def read(self, agent_id: str, direction: str, seq: int | None, limit: int) -> list[tuple]:
        """The selector's two statements: the agent's head and epoch, then one index range."""
        self.execute(
            "SELECT agent_id, head_seq, timeline_epoch, archived_at FROM snapshots_agentsnapshot WHERE agent_id = %s",
            (agent_id,),
        ).fetchone()
        base = f"SELECT {ROW_COLUMNS} FROM timeline_timelinerow WHERE agent_id = %s"
        if direction == "tail":
            rows = self.execute(f"{base} ORDER BY seq DESC LIMIT %s", (agent_id, limit)).fetchall()[::-1]
        elif direction == "before":
            rows = self.execute(f"{base} AND seq < %s ORDER BY seq DESC LIMIT %s", (agent_id, seq, limit)).fetchall()[
                ::-1
            ]
        else:
            rows = self.execute(f"{base} AND seq > %s ORDER BY seq LIMIT %s", (agent_id, seq, limit)).fetchall()
        return [(s, at, t, self.decode_item(item), iid) for s, at, t, item, iid in rows]

    def seed(self, agent_id: str, count: int) -> None:
        """Fill an empty timeline with seqs 1..count and set head_seq to match, in one transaction."""
        now = self.now()
        self.execute(self._begin)
        if self.backend == "sqlite":
            self.executemany(
                "INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id) "
                "VALUES (%s, %s, %s, %s, %s, NULL)",
                ((agent_id, n, now, "assistant_message", json.dumps(new_item(n))) for n in range(1, count + 1)),
            )
        else:
            with (
                self.conn.cursor() as cursor,
                cursor.copy(
                    "COPY timeline_timelinerow (agent_id, seq, committed_at, item_type, item) FROM STDIN"
                ) as copy,
            ):
                for n in range(1, count + 1):
                    copy.write_row((agent_id, n, now, "assistant_message", json.dumps(new_item(n))))
        self.execute("UPDATE snapshots_agentsnapshot SET head_seq = %s WHERE agent_id = %s", (count, agent_id))
        self.execute("COMMIT")
        if self.backend == "postgresql":
            self.execute("ANALYZE timeline_timelinerow")

    def head(self, agent_id: str) -> int:
        return self.execute("SELECT head_seq FROM snapshots_agentsnapshot WHERE agent_id = %s", (agent_id,)).fetchone()[
            0
        ]

    def close(self) -> None:
        self.conn.close()


# --- measuring helpers ----------------------------------------------------


def alternate_rounds(rounds: int, total: int, raw_step: Callable[[int], None], chartr_step: Callable[[int], None]):
    """Run ``total`` calls of each side in ``rounds`` alternating chunks; return (raw_s, chartr_s)."""
    per_round = max(1, total // rounds)
    raw_s = chartr_s = 0.0
    counter = 0
    for _ in range(rounds):
        started = time.perf_counter()
        for i in range(per_round):
            raw_step(counter + i)
        raw_s += time.perf_counter() - started
        started = time.perf_counter()
        for i in range(per_round):
            chartr_step(counter + i)
        chartr_s += time.perf_counter() - started
        counter += per_round
    return raw_s, chartr_s, per_round * rounds


def interleaved_latency(samples: int, raw_call: Callable[[], object], chartr_call: Callable[[], object]):
    """Time each call in ms, alternating sides call by call, after a short warm-up."""
    for _ in range(min(10, samples)):
        raw_call()
        chartr_call()
    raw_ms, chartr_ms = [], []
    for _ in range(samples):
        started = time.perf_counter_ns()
        raw_call()
        raw_ms.append((time.perf_counter_ns() - started) / 1e6)
        started = time.perf_counter_ns()
        chartr_call()
        chartr_ms.append((time.perf_counter_ns() - started) / 1e6)
    return raw_ms, chartr_ms


def read_seq(direction: str, rows: int) -> int | None:
    """The cursor for a read in the middle of the history (tail needs none)."""
    return None if direction == "tail" else rows // 2


# --- the server process ---------------------------------------------------


# --- the cases ------------------------------------------------------------


def bench_service_appends(report: Report, raw: RawStore, profile: Profile) -> None:
    from timeline.services import NewTimelineItem, append_timeline_items

    raw_s, chartr_s, calls = alternate_rounds(
        profile.rounds,
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

    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
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

    raw_s, chartr_s, calls = alternate_rounds(
        profile.rounds,
        profile.api_single_appends,
        lambda n: raw.append("raw-api-1", [new_item(n)]),
        lambda n: post("bench-api-1", [new_item(n)]),
    )
    report.rate("append api 1 item/call", calls, chartr_s, calls, raw_s)

    def batch(n: int) -> list[dict]:
        return [new_item(n * BATCH_SIZE + i) for i in range(BATCH_SIZE)]

    raw_s, chartr_s, calls = alternate_rounds(
        profile.rounds,
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


# --- append-to-delivery over the SSE stream -------------------------------

STREAM_UNAVAILABLE = "stream endpoint not available"


def stream_available(server: Server, token: str, agent_id: str) -> bool:
    import httpx

    url = f"{server.base_url}/api/v1/agents/{agent_id}/timeline/stream"
    try:
        with httpx.stream(
            "GET", url, headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}, timeout=5
        ) as response:
            return response.status_code == 200 and response.headers.get("content-type", "").startswith(
                "text/event-stream"
            )
    except httpx.HTTPError:
        return False


async def _subscribe(
    client, agent_id: str, after_seq: int, index: int, received: dict, connected: asyncio.Event, ready: list
):
    """Read one SSE stream, stamping the arrival of every committed seq."""
    url = f"/api/v1/agents/{agent_id}/timeline/stream"
    async with client.stream(
        "GET", url, params={"after_seq": after_seq}, headers={"Accept": "text/event-stream"}
    ) as response:
        if response.status_code != 200:
            raise RuntimeError(f"stream answered {response.status_code}")
        ready.append(index)
        if len(ready) == len(received):
            connected.set()
        event, event_id = "message", None
        async for line in response.aiter_lines():
            if line == "":
                if event == "committed" and event_id is not None:
                    received[index].setdefault(int(event_id), time.perf_counter())
                event, event_id = "message", None
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("id:"):
                event_id = line[3:].strip()


async def _delivery(server: Server, token: str, agent_id: str, subscribers: int, appends: int):
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=subscribers + 10, max_keepalive_connections=subscribers + 10)
    timeout = httpx.Timeout(30, read=None)
    received: dict[int, dict[int, float]] = {i: {} for i in range(subscribers)}
    connected = asyncio.Event()
    ready: list[int] = []
    async with (
        httpx.AsyncClient(base_url=server.base_url, headers=headers, limits=limits, timeout=timeout) as streams,
        httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as writer,
    ):
        head = (await writer.get(f"/api/v1/agents/{agent_id}/timeline", params={"limit": 1})).json()
        after_seq = head["window"]["next_seq"] - 1
        tasks = [
            asyncio.create_task(_subscribe(streams, agent_id, after_seq, i, received, connected, ready))
            for i in range(subscribers)
        ]
        try:
            await asyncio.wait_for(connected.wait(), timeout=60)

            async def append_and_wait(n: int) -> tuple[int, float]:
                started = time.perf_counter()
                response = await writer.post(
                    f"/api/v1/agents/{agent_id}/timeline", json={"items": [{"item": new_item(n)}]}
                )
                seq = response.json()["rows"][0]["seq"]
                deadline = started + 30
                while not all(seq in got for got in received.values()):
                    if time.perf_counter() > deadline:
                        raise RuntimeError(f"seq {seq} did not reach every subscriber within 30 s")
                    for task in tasks:
                        if task.done() and task.exception():
                            raise task.exception()
                    await asyncio.sleep(0.001)
                return seq, started

            # The first append also proves every subscription is live.
            await append_and_wait(-1)
            each_ms: list[float] = []
            last_ms: list[float] = []
            for n in range(appends):
                seq, started = await append_and_wait(n)
                arrivals = [(got[seq] - started) * 1000 for got in received.values()]
                each_ms.extend(arrivals)
                last_ms.append(max(arrivals))
            return each_ms, last_ms
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def bench_delivery(report: Report, raw: RawStore, profile: Profile, server: Server, token: str) -> None:
    case = f"delivery {profile.subscribers} subscribers"
    if not stream_available(server, token, "bench-delivery"):
        report.skip(case, STREAM_UNAVAILABLE)
        return
    each_ms, last_ms = asyncio.run(
        _delivery(server, token, "bench-delivery", profile.subscribers, profile.delivery_appends)
    )

    # What the database must do at the least: commit the row, then each
    # subscriber reads the rows after its cursor. "each" is one subscriber's
    # share (commit + one read), "last" is all of them (commit + N reads).
    raw_each_ms, raw_last_ms = [], []
    for _ in range(max(profile.delivery_appends, 5)):
        head = raw.head("raw-delivery")
        started = time.perf_counter_ns()
        raw.append("raw-delivery", [new_item(head)])
        raw.read("raw-delivery", "after", head, READ_LIMIT)
        raw_each_ms.append((time.perf_counter_ns() - started) / 1e6)
        for _ in range(profile.subscribers - 1):
            raw.read("raw-delivery", "after", head, READ_LIMIT)
        raw_last_ms.append((time.perf_counter_ns() - started) / 1e6)
    report.latency(f"{case} (each)", each_ms, raw_each_ms, note="raw = commit + 1 read")
    report.latency(
        f"{case} (last)", last_ms, raw_last_ms, note=f"until all have it; raw = commit + {profile.subscribers} reads"
    )


# --- main -----------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile or "default"]
    if args.large_rows:
        profile = Profile(**{**profile.__dict__, "large_rows": args.large_rows})

    root = Path(tempfile.mkdtemp(prefix="chartr-bench-"))
    environment = prepare_environment(root)
    server: Server | None = None
    raw: RawStore | None = None
    started = time.monotonic()
    try:
        setup_django()
        from django.db import connection

        report = Report(backend=environment.backend)
        print(
            f"chartr timeline benchmark: profile={args.profile or 'default'} backend={environment.backend} "
            f"baseline={'raw sqlite3' if environment.backend == 'sqlite' else 'raw psycopg'} "
            f"api-client={args.client} cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        reads = {
            human_count(profile.small_rows): ("bench-read-small", profile.small_rows),
            human_count(profile.large_rows): ("bench-read-large", profile.large_rows),
        }
        create_agents(
            [
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
            ]
        )
        from tokens.services import create_api_token

        _, token = create_api_token(name="bench")
        raw = RawStore(environment)
        for agent_id, rows in reads.values():
            seeding = time.perf_counter()
            raw.seed(agent_id, rows)
            print(f"seeded {rows:,} rows in {time.perf_counter() - seeding:.1f} s", flush=True)

        bench_service_appends(report, raw, profile)
        bench_selector_reads(report, raw, profile, reads)
        connection.close()

        # gunicorn with one uvicorn worker on 127.0.0.1 and a port the kernel picks.
        server = Server(environment.env, root / "server.log", command="gunicorn").start()
        with http_client(args.client, server.base_url, token) as client:
            bench_api_appends(report, raw, profile, client)
            bench_api_reads(report, raw, profile, client, reads)
        bench_delivery(report, raw, profile, server, token)
        print(f"done in {time.monotonic() - started:.0f} s, load={os.getloadavg()[0]:.2f}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(report.as_json(), indent=2, default=str))
        return 0
    finally:
        if server is not None:
            server.stop()
        if raw is not None:
            raw.close()
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
