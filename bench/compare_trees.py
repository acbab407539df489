#!/usr/bin/env python
"""Before and after a change, in one run: two checkouts served side by side, requests alternated.

Run from the repo root with the project's venv, naming the other checkout (the base)::

    git worktree add /tmp/chartr-base <commit>      # or: git archive <commit> | tar -x -C /tmp/chartr-base
    .venv/bin/python bench/compare_trees.py --base /tmp/chartr-base
    .venv/bin/python bench/compare_trees.py --base /tmp/chartr-base --smoke   # seconds; only proves it runs
    .venv/bin/python bench/compare_trees.py --base /tmp/chartr-old --own-databases   # an older schema

Both trees are served by the same venv, each by its own gunicorn with one uvicorn worker
(``cd <tree>``), on one scratch database (SQLite, or PostgreSQL with DATABASE_URL), migrated
by this checkout. With ``--own-databases`` (a base whose migrations differ) each tree gets a
scratch database of its own, migrated and seeded by a process running that tree's code
(``SEED``: the services it calls kept their names and arguments since 38386aa). Two cases, as Paseo's daemon calls them: a 1-item API append and the
newest-100 read. Each repetition runs a chunk of sequential keep-alive requests (the bare
socket client, bench/lean_http.py) on each side, and the same chunk of raw database work
(bench/raw_store.py), the order rotating every repetition, so load from the rest of the machine
hits all three alike. Printed, medians over the repetitions: server CPU per request
(``/proc/<pid>/stat`` of the server's process group), wall time per request, and the wall ratio
against the raw baseline (``cost xN``, as timeline_bench.py prints it). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench.common import (  # noqa: E402
    ITEM_TEXT,
    Environment,
    create_agents,
    new_item,
    prepare_environment,
    setup_django,
)
from bench.concurrency import group_cpu_seconds  # noqa: E402
from bench.lean_http import RawHttpClient  # noqa: E402
from bench.raw_store import RawStore  # noqa: E402
from tests.support.processes import GUNICORN, ScratchDatabase, Server  # noqa: E402

READ_ROWS = 200
READ_LIMIT = 100
AGENTS = ["agent-base", "agent-head", "reads"]

#: Run by a tree's own Python (``python -c``, cwd the tree): migrate, the agents, the read's rows,
#: a token (printed). argv: the item text, the agents, the read's rows.
SEED = """
import sys, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
from timeline.services import NewTimelineItem, append_timeline_items
from tokens.services import create_api_token
text, agents, rows = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
project = create_project(directory="/srv/bench", kind="git")
workspace = create_workspace(project=project, directory="/srv/bench/main", kind="checkout")
for agent_id in agents:
    create_agent(workspace=workspace, provider="bench", agent_id=agent_id, lifecycle="running")
items = [NewTimelineItem(item={"type": "assistant_message", "text": f"{text}{n}"}) for n in range(rows)]
append_timeline_items(agent_id="reads", items=items)
print(create_api_token(name="bench")[1])
"""


def tree_server(tree: Path, env: dict[str, str], log: Path) -> Server:
    """gunicorn as the benchmarks start it, from ``tree``'s own modules (its directory is first on the path)."""
    command = ["sh", "-c", 'cd "$0" && exec "$@"', str(tree), sys.executable, *GUNICORN]
    return Server({**env, "PYTHONPATH": str(tree)}, log, command=command).start()


def own_database(tree: Path, name: str, environment: Environment) -> tuple[dict[str, str], ScratchDatabase, str]:
    """A scratch database and state dirs for ``tree`` alone, migrated and seeded by its own code, and a token."""
    root = environment.root / name
    database = ScratchDatabase(environment.backend, root, purpose=f"bench_{name}").create()
    env = {k: v for k, v in environment.env.items() if k != "DATABASE_URL"}
    env.update({"CHARTR_DATA_DIR": str(root / "data"), "XDG_CONFIG_HOME": str(root / "config"), **database.env()})
    seed = [sys.executable, "-c", SEED, ITEM_TEXT, ",".join(AGENTS), str(READ_ROWS)]
    done = subprocess.run(seed, cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    if done.returncode != 0:
        database.drop()
        raise RuntimeError(f"seeding {tree} failed:\n{done.stderr[-3000:]}")
    return env, database, done.stdout.strip().splitlines()[-1]


def cases(raw: RawStore) -> dict[str, tuple[Callable, Callable]]:
    """Per case: (the raw baseline's step, the API step for a client and its agent)."""

    def append(client: RawHttpClient, agent_id: str, n: int) -> None:
        body = json.dumps({"items": [{"item": new_item(n)}]}).encode()
        status, answer = client.post(f"/api/v1/agents/{agent_id}/timeline", body)
        assert status == 201, answer[:300]

    def read(client: RawHttpClient, agent_id: str, n: int) -> None:
        status, answer = client.get("/api/v1/agents/reads/timeline", {"limit": READ_LIMIT})
        assert status == 200 and len(json.loads(answer)["rows"]) == READ_LIMIT, answer[:300]

    return {
        "append 1 item": (lambda n: raw.append("raw-append", [new_item(n)]), append),
        "read newest 100": (lambda n: raw.read("raw-reads", "tail", None, READ_LIMIT), read),
    }


def timed(step: Callable[[int], None], start: int, chunk: int, pgid: int | None = None) -> tuple[float, float]:
    """(wall ms, server CPU ms) per call of ``step`` over ``chunk`` calls."""
    cpu = group_cpu_seconds(pgid) if pgid else 0.0
    started = time.perf_counter()
    for n in range(start, start + chunk):
        step(n)
    wall = (time.perf_counter() - started) * 1000 / chunk
    return wall, ((group_cpu_seconds(pgid) - cpu) * 1000 / chunk if pgid else 0.0)


def measure(raw: RawStore, sides: dict[str, tuple[Server, RawHttpClient]], repetitions: int, chunk: int) -> None:
    for case, (raw_step, api_step) in cases(raw).items():
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
        order = ["raw", *sides]
        counter = 0
        steps = {name: functools.partial(api_step, client, f"agent-{name}") for name, (_, client) in sides.items()}
        for step in steps.values():  # warm-up
            timed(step, 10**6, 20)
        for repetition in range(repetitions):
            walls: dict[str, tuple[float, float]] = {}
            for name in order[repetition % 3 :] + order[: repetition % 3]:
                if name == "raw":
                    walls[name] = timed(raw_step, counter, chunk)
                else:
                    walls[name] = timed(steps[name], counter, chunk, sides[name][0].process.pid)
            counter += chunk
            for name in sides:
                wall, cpu = walls[name]
                figures[name].append((wall, cpu, wall / walls["raw"][0]))
        medians = {
            name: [statistics.median(column) for column in zip(*rows, strict=True)] for name, rows in figures.items()
        }
        for name, (wall, cpu, ratio) in medians.items():
            spread = [row[2] for row in figures[name]]
            print(
                f"{case:<16} {name:<5} server CPU {cpu:5.2f} ms   wall {wall:5.2f} ms   "
                f"cost x{ratio:.1f} of raw (spread x{min(spread):.1f}-x{max(spread):.1f})",
                flush=True,
            )
        base, head = medians["base"], medians["head"]
        print(
            f"{case:<16} head/base: server CPU {head[1] / base[1] - 1:+.0%}, wall {head[0] / base[0] - 1:+.0%}, "
            f"cost {head[2] / base[2] - 1:+.0%}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (the 'before')")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--chunk", type=int, default=200, help="calls per side per repetition")
    parser.add_argument("--smoke", action="store_true", help="2 x 10 calls")
    parser.add_argument(
        "--own-databases", action="store_true", help="each tree on its own database, migrated and seeded by its code"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.repetitions, args.chunk = 2, 10
    root = Path(tempfile.mkdtemp(prefix="chartr-bench-trees-"))
    environment = prepare_environment(root)
    servers: list[Server] = []
    databases: list[ScratchDatabase] = []
    raw: RawStore | None = None
    try:
        setup_django()
        from django.db import connections

        from timeline.services import NewTimelineItem, append_timeline_items
        from tokens.services import create_api_token

        create_agents([*AGENTS, "raw-append", "raw-reads"])
        append_timeline_items(agent_id="reads", items=[NewTimelineItem(item=new_item(n)) for n in range(READ_ROWS)])
        _, token = create_api_token(name="bench")
        connections.close_all()
        raw = RawStore(environment)
        raw.seed("raw-reads", READ_ROWS)
        print(
            f"chartr trees benchmark: base={args.base} head={REPO_ROOT} backend={environment.backend} "
            f"cores={os.cpu_count()} load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        sides = {}
        for name, tree in (("base", args.base.resolve()), ("head", REPO_ROOT)):
            env, side_token = environment.env, token
            if args.own_databases:
                env, database, side_token = own_database(tree, name, environment)
                databases.append(database)
            servers.append(tree_server(tree, env, root / f"{name}.log"))
            sides[name] = (servers[-1], RawHttpClient(servers[-1].base_url, side_token))
        measure(raw, sides, args.repetitions, args.chunk)
        print(f"done, load={os.getloadavg()[0]:.2f}", flush=True)
    finally:
        for server in servers:
            server.stop()
        if raw is not None:
            raw.close()
        for database in databases:
            database.drop()
        environment.database.drop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
