#!/usr/bin/env python
"""chartr's timeline service next to the Python ``eventsourcing`` library's SQLite event store, in one process.

Run from the repo root with the project's venv (``make install`` brings the peers)::

    .venv/bin/python bench/peers.py                        # 1k history, a minute or two
    .venv/bin/python bench/peers.py --history 1000 10000   # more history lengths
    .venv/bin/python bench/peers.py --smoke                # seconds; only proves it runs

Cases, each at every history length, the two sides alternating in chunks:

- ``append``: CPU (``time.process_time``) per 1-item append. chartr:
  ``append_timeline_items``; eventsourcing: ``SQLiteAggregateRecorder.insert_events``
  of one ``StoredEvent`` (JSON state) at the next version. Both in WAL mode
  at chartr's ``synchronous=NORMAL`` (``--eventsourcing-synchronous full``
  gives eventsourcing SQLite's default, which costs fsync time).
  On PostgreSQL both write to the same scratch database at the server's
  ``synchronous_commit`` (on).
- ``read newest 100``: p50 wall time, and the CPU per read (this process's, plus on
  PostgreSQL the server backends' serving the bench's database, read from ``/proc``:
  a figure that waiting for a core on a loaded machine does not move). Each side
  returns the 100 items decoded to Python values:

  - chartr: ``read_timeline(limit=100)``: the agent's row and the newest 100 rows (two
    statements; one pipelined round trip on PostgreSQL), each row a dict of seq, aware
    ``committed_at``, item type, decoded item, item id and turn id;
  - eventsourcing: ``select_events(desc=True, limit=100)`` (one statement, a
    server-side prepared statement on PostgreSQL, from its connection pool): 100
    ``StoredEvent`` objects, then ``json.loads`` of each state;
  - LangGraph's ``SqliteSaver`` (WAL, ``synchronous=NORMAL``), holding the
    conversation as a graph does: each append puts a checkpoint with the whole
    message list; a read is ``get_tuple`` (the latest checkpoint's row, its msgpack
    blob decoded whole, and its pending writes) and the list's last 100.

Past 10k rows SqliteSaver runs fewer calls per repetition (``chunk x 10k / history``, at least 3):
each of its appends writes the whole history, seconds at 1M.

Each line prints ``cost xN``: chartr's figure over the peer's, median of the
repetitions, and the spread (min-max) of the per-repetition ratios. A missing
peer is skipped with a message. The API against raw sqlite3/psycopg is bench/timeline_bench.py's.
Nothing here is a test: no figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench.common import create_agents, new_item, prepare_environment, setup_django  # noqa: E402
from kernel.engines import for_engine  # noqa: E402


def cost_line(case: str, ratios: list[float], chartr: float, peer_name: str, peer: float, unit: str) -> str:
    return (
        f"{case:<34} chartr {chartr:8.3f} {unit}   {peer_name} {peer:8.3f} {unit}   "
        f"cost x{statistics.median(ratios):.3g} (spread x{min(ratios):.3g}-x{max(ratios):.3g})"
    )


class EventsourcingStore:
    """eventsourcing's aggregate recorder: SQLite in its own file, or PostgreSQL in chartr's scratch database."""

    name = "eventsourcing"

    def __init__(self, path: Path, database_url: str | None = None, synchronous: str = "normal"):
        if database_url:
            from urllib.parse import urlsplit

            from eventsourcing.postgres import PostgresAggregateRecorder, PostgresDatastore

            url = urlsplit(database_url)
            datastore = PostgresDatastore(
                url.path.lstrip("/"),
                url.hostname or "127.0.0.1",
                url.port or 5432,
                url.username or "postgres",
                url.password or "",
                originator_id_type="text",
            )
            self.recorder = PostgresAggregateRecorder(datastore, events_table_name="bench_stored_events")
        else:
            from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore

            datastore = SQLiteDatastore(str(path), originator_id_type="text")
            pool = datastore.pool
            create_connection = pool._create_connection

            def create_connection_at_level():
                made = create_connection()
                made._sqlite_conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
                return made

            pool._create_connection = create_connection_at_level
            self.recorder = SQLiteAggregateRecorder(datastore)
        self.recorder.create_table()
        self.versions: dict[str, int] = {}

    def close(self) -> None:
        close = getattr(self.recorder.datastore, "close", None)
        if close:
            close()

    def append(self, stream: str, n: int) -> None:
        from eventsourcing.persistence import StoredEvent

        version = self.versions.get(stream, 0) + 1
        state = json.dumps(new_item(n)).encode()
        self.recorder.insert_events([StoredEvent(stream, version, "bench:Item", state)])
        self.versions[stream] = version

    def read_newest(self, stream: str, limit: int) -> list:
        return [json.loads(e.state) for e in self.recorder.select_events(stream, desc=True, limit=limit)]

    def seed(self, stream: str, count: int) -> None:
        from eventsourcing.persistence import StoredEvent

        # Batches of 1,000 events per transaction, as chartr's seeding batches its appends: one
        # commit per event made a 1M history take longer to seed than to measure.
        for start in range(0, count, 1000):
            events = [
                StoredEvent(stream, version + 1, "bench:Item", json.dumps(new_item(version)).encode())
                for version in range(start, min(start + 1000, count))
            ]
            self.recorder.insert_events(events)
        self.versions[stream] = count


class LangGraphStore:
    """LangGraph's SqliteSaver holding a conversation the way a graph does: the whole message list per checkpoint."""

    name = "langgraph-sqlite"
    #: Each append writes the whole history again: past 10k rows it runs fewer calls (``calls_at``).
    grows_with_history = True

    def __init__(self, path: Path):
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        connection = sqlite3.connect(str(path), check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        self.saver = SqliteSaver(connection)
        self.saver.setup()
        self.messages: dict[str, list] = {}

    def _config(self, stream: str) -> dict:
        return {"configurable": {"thread_id": stream, "checkpoint_ns": ""}}

    def _put(self, stream: str, step: int) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": self.messages[stream]}
        self.saver.put(self._config(stream), checkpoint, {"source": "loop", "step": step}, {})

    def append(self, stream: str, n: int) -> None:
        self.messages.setdefault(stream, []).append(new_item(n))
        self._put(stream, len(self.messages[stream]))

    def read_newest(self, stream: str, limit: int) -> list:
        return self.saver.get_tuple(self._config(stream)).checkpoint["channel_values"]["messages"][-limit:]

    def seed(self, stream: str, count: int) -> None:
        # Only the latest checkpoint is ever read: one put of the whole history.
        self.messages[stream] = [new_item(n) for n in range(count)]
        self._put(stream, count)


def chartr_append(agent_id: str, n: int) -> None:
    from timeline.services import NewTimelineItem, append_timeline_items

    append_timeline_items(agent_id=agent_id, items=[NewTimelineItem(item=new_item(n), item_id=None)])


def chartr_read(agent_id: str, limit: int) -> list:
    from timeline.selectors import read_timeline

    return read_timeline(agent_id=agent_id, limit=limit).rows


def cpu_ms_per_call(call, calls: int) -> float:
    started = time.process_time()
    for n in range(calls):
        call(n)
    return (time.process_time() - started) * 1000 / calls


def wall_p50_ms(call, calls: int) -> float:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def server_cpu_seconds() -> float:
    """CPU time of the PostgreSQL backends serving this database (0 on SQLite, or when /proc does not show them)."""
    from django.db import connection

    if not for_engine(connection, {"postgresql": True}, default=False):
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        pids = [pid for (pid,) in cursor.fetchall()]
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def read_figures(call, calls: int) -> tuple[float, float]:
    """p50 wall ms per call, and CPU ms per call (this process and the database server's)."""
    server_before, started = server_cpu_seconds(), time.process_time()
    p50 = wall_p50_ms(call, calls)
    cpu = time.process_time() - started + server_cpu_seconds() - server_before
    return p50, cpu * 1000 / calls


def seed_chartr(agent_id: str, history: int) -> None:
    from timeline.services import MAX_ITEMS_PER_APPEND, NewTimelineItem, append_timeline_items

    for start in range(0, history, MAX_ITEMS_PER_APPEND):
        size = min(MAX_ITEMS_PER_APPEND, history - start)
        append_timeline_items(
            agent_id=agent_id, items=[NewTimelineItem(item=new_item(start + i), item_id=None) for i in range(size)]
        )


def analyze_after_seeding() -> None:
    """On PostgreSQL, ANALYZE as autovacuum would after a bulk load: without statistics for
    the freshly seeded tables the planner may read a history through another index and sort it."""
    from django.db import connection

    if for_engine(connection, {"postgresql": True}, default=False):
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def calls_at(peer, history: int, chunk: int) -> int:
    """Calls per side per repetition: ``chunk``, or fewer for a peer whose every call costs the whole
    history (a 1M-row SqliteSaver checkpoint takes seconds to write), at least 3 so there is a median."""
    if getattr(peer, "grows_with_history", False) and history > 10_000:
        return max(3, chunk * 10_000 // history)
    return chunk


def bench_history(peer, history: int, repetitions: int, chunk: int) -> None:
    agent_id = stream = f"peers-{peer.name}-{history}"
    seed_chartr(agent_id, history)
    peer.seed(stream, history)
    chunk = calls_at(peer, history, chunk)
    analyze_after_seeding()
    label = f"@{history // 1000}k" if history >= 1000 else f"@{history}"

    appends = []
    for _ in range(repetitions):
        ours = cpu_ms_per_call(lambda n: chartr_append(agent_id, n), chunk)
        theirs = cpu_ms_per_call(lambda n: peer.append(stream, n), chunk)
        appends.append((ours, theirs))
    reads, read_cpus = [], []
    for _ in range(repetitions):
        ours, ours_cpu = read_figures(lambda: chartr_read(agent_id, 100), chunk)
        theirs, theirs_cpu = read_figures(lambda: peer.read_newest(stream, 100), chunk)
        reads.append((ours, theirs))
        read_cpus.append((ours_cpu, theirs_cpu))
    for case, pairs in (
        (f"append service CPU/append {label}", appends),
        (f"read newest 100 p50 {label}", reads),
        (f"read newest 100 CPU/read {label}", read_cpus),
    ):
        chartr_figure = statistics.median(a for a, _ in pairs)
        peer_figure = statistics.median(b for _, b in pairs)
        print(cost_line(case, [a / b for a, b in pairs], chartr_figure, peer.name, peer_figure, "ms"), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, nargs="+", default=[1000])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=200, help="calls per side per repetition")
    parser.add_argument("--smoke", action="store_true", help="100 rows, 3 x 10 calls")
    parser.add_argument(
        "--eventsourcing-synchronous",
        choices=["normal", "full"],
        default="normal",
        help="eventsourcing's SQLite synchronous level (chartr runs normal)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.history, args.repetitions, args.chunk = [100], 3, 10

    root = Path(tempfile.mkdtemp(prefix="chartr-bench-peers-"))
    environment = prepare_environment(root)
    try:
        print(
            f"chartr peers benchmark: backend={environment.backend} cores={os.cpu_count()} "
            f"load={os.getloadavg()[0]:.2f} eventsourcing_sqlite_synchronous={args.eventsourcing_synchronous}",
            flush=True,
        )
        setup_django()
        database_url = environment.database.url if environment.backend == "postgresql" else None
        peers = []
        try:
            peers.append(
                EventsourcingStore(root / "eventsourcing.sqlite3", database_url, args.eventsourcing_synchronous)
            )
        except ImportError:
            print("eventsourcing  skipped: eventsourcing[postgres] is not installed (make install)", flush=True)
        if database_url:
            print("langgraph-sqlite  skipped: SqliteSaver compares on SQLite only", flush=True)
        else:
            try:
                peers.append(LangGraphStore(root / "langgraph.sqlite3"))
            except ImportError:
                print("langgraph-sqlite  skipped: langgraph-checkpoint-sqlite is not installed (make install)")
        create_agents([f"peers-{peer.name}-{history}" for peer in peers for history in args.history])
        for peer in peers:
            for history in args.history:
                bench_history(peer, history, args.repetitions, args.chunk)
        for peer in peers:
            getattr(peer, "close", lambda: None)()
        print(f"done, load={os.getloadavg()[0]:.2f}", flush=True)
        return 0
    finally:
        from django.db import connections

        connections.close_all()
        environment.database.drop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
