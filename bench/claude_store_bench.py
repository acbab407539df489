"""A Claude Code session mirrored as the Claude Agent SDK writes it, through ``ChartrSessionStore``.

10,000 transcript entries (about 1 KB each, every one with its ``uuid``) appended in batches of 1
to 500 (a fixed pseudo-random sequence: the SDK flushes per turn, or at 500 entries), then a
``load`` of the whole session. Three sides alternate batch by batch against one server:

- the store: ``ChartrSessionStore.append`` (the entries' POST, then the summary's fold and its
  compare-and-swap PUT), and ``load``;
- the timeline API: the same entries as ``claude_code.*`` items in ``POST .../timeline``, the
  API append the store's ratio is held to;
- raw ``sqlite3`` / ``psycopg`` (``bench/raw_store.py``): the same rows inserted and read back
  (``SELECT item ... ORDER BY seq``, each record taken out of its item).

Run: ``.venv/bin/python bench/claude_store_bench.py`` (``DATABASE_URL=postgres://...`` for
PostgreSQL). ``--smoke`` proves it runs in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (  # noqa: E402
    Report,
    create_agents,
    drop_scratch_database,
    prepare_environment,
    setup_django,
)
from bench.raw_store import RawStore  # noqa: E402
from tests.support.processes import Server  # noqa: E402

PROFILES = {"default": (10_000, 500, 7), "smoke": (300, 50, 2)}
KEY = {"project_key": "-srv-bench", "session_id": "6f1c1d2e-0000-4000-8000-000000000001"}


def entry(n: int) -> dict:
    """A transcript line of about 1 KB, shaped like Claude Code's (an assistant text block)."""
    return {
        "parentUuid": str(uuid.UUID(int=n)) if n else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/srv/bench",
        "sessionId": KEY["session_id"],
        "version": "2.0.14",
        "gitBranch": "main",
        "type": "assistant" if n % 3 else "user",
        "message": {"role": "assistant", "content": [{"type": "text", "text": f"step {n}: " + "lorem ipsum " * 70}]},
        "uuid": str(uuid.UUID(int=n + 1)),
        "timestamp": "2025-10-14T09:00:00.000Z",
    }


def batches(total: int, largest: int) -> list[list[dict]]:
    sizes, made = random.Random(41), 0
    out = []
    while made < total:
        size = min(sizes.randint(1, largest), total - made)
        out.append([entry(made + i) for i in range(size)])
        made += size
    return out


def foreign(entries: list[dict]) -> list[dict]:
    return [{"type": f"claude_code.{e['type']}", "record": e} for e in entries]


async def measure(report: Report, raw: RawStore, base_url: str, token: str, profile: tuple[int, int, int]) -> None:
    import httpx
    from chartr_client import AsyncClient
    from chartr_client.claude import ChartrSessionStore

    total, largest, load_samples = profile
    work = batches(total, largest)
    times = {"store": 0.0, "api": 0.0, "raw": 0.0}
    async with AsyncClient(base_url, token) as client, httpx.AsyncClient(base_url=base_url) as api:
        store = ChartrSessionStore(client=client)
        headers = {"Authorization": f"Bearer {token}"}
        for batch in work:
            started = time.perf_counter()
            raw.append("raw-session", foreign(batch))
            times["raw"] += time.perf_counter() - started
            started = time.perf_counter()
            body = {"items": [{"item": item, "item_id": item["record"]["uuid"]} for item in foreign(batch)]}
            (await api.post("/api/v1/agents/api-session/timeline", json=body, headers=headers)).raise_for_status()
            times["api"] += time.perf_counter() - started
            started = time.perf_counter()
            await store.append(KEY, batch)
            times["store"] += time.perf_counter() - started
        note = f"{len(work)} batches of 1-{largest}"
        report.rate("mirror append (store)", total, times["store"], total, times["raw"], note)
        report.rate("timeline api append (same)", total, times["api"], total, times["raw"], note)

        # Alternated sample by sample (the store's load is a coroutine: interleaved_latency's by hand).
        loaded: list = []
        raw_entries: list = []
        raw_ms, store_ms = [], []
        for _ in range(load_samples):
            started = time.perf_counter_ns()
            rows = raw.execute(
                "SELECT item FROM timeline_timelinerow WHERE agent_id = %s ORDER BY seq", ("raw-session",)
            ).fetchall()
            raw_entries = [raw.decode_item(item)["record"] for (item,) in rows]
            raw_ms.append((time.perf_counter_ns() - started) / 1e6)
            started = time.perf_counter_ns()
            loaded = await store.load(KEY)
            store_ms.append((time.perf_counter_ns() - started) / 1e6)
        assert loaded == raw_entries and len(loaded) == total, "the store's load differs from the raw read"
        report.latency(f"mirror load {total} entries", store_ms, raw_ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="seconds; proves it runs")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    profile = PROFILES["smoke" if args.smoke else "default"]
    root = Path(tempfile.mkdtemp(prefix="chartr-bench-claude-"))
    environment = prepare_environment(root)
    server = None
    try:
        setup_django()
        from django.db import connection

        from tokens.services import create_api_token

        report = Report(backend=environment.backend)
        print(
            f"chartr Claude Code store benchmark: backend={environment.backend} entries={profile[0]} "
            f"cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        create_agents(["raw-session", "api-session"])
        _, token = create_api_token(name="bench")
        raw = RawStore(environment)
        connection.close()
        server = Server(environment.env, root / "server.log", command="gunicorn").start()
        try:
            asyncio.run(measure(report, raw, server.base_url, token, profile))
        finally:
            raw.close()
        print(f"done, load={os.getloadavg()[0]:.2f}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(report.as_json(), indent=2, default=str))
    finally:
        if server is not None:
            server.stop()
        drop_scratch_database(environment)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
