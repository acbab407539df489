"""What every bench script shares: results and their printing, the throwaway environment, Django.

Each case is measured next to a raw baseline in the same run, the two sides alternated so that
noise from other processes hits both; nothing here asserts a figure.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The server launcher and scratch databases are the test suite's own (tests/support/processes.py).
sys.path.insert(0, str(REPO_ROOT))
from chartr.paths import prepare_state  # noqa: E402
from tests.support.processes import ScratchDatabase, run_engine  # noqa: E402

#: A typical streamed chunk: small text, an item id like the ones agents send.
ITEM_TEXT = "The quick brown fox jumps over the lazy dog. " * 4


def human_count(n: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


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


@dataclass
class Environment:
    root: Path
    env: dict[str, str]
    backend: str  # "sqlite" or "postgresql"
    sqlite_path: Path | None
    database: ScratchDatabase


def prepare_environment(root: Path) -> Environment:
    """Point this process (and the server it starts) at throwaway dirs and a scratch database.

    Must run before Django is imported: settings pick the dirs and the database on import.
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
    prepare_state()  # the dirs and secret key `manage.py migrate` would create (settings write nothing)
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


def alternate(passes: int, total: int, raw_step: Callable[[int], None], chartr_step: Callable[[int], None]):
    """Run ``total`` calls of each side in ``passes`` alternating chunks; return (raw_s, chartr_s, calls)."""
    per_pass = max(1, total // passes)
    raw_s = chartr_s = 0.0
    counter = 0
    for _ in range(passes):
        started = time.perf_counter()
        for i in range(per_pass):
            raw_step(counter + i)
        raw_s += time.perf_counter() - started
        started = time.perf_counter()
        for i in range(per_pass):
            chartr_step(counter + i)
        chartr_s += time.perf_counter() - started
        counter += per_pass
    return raw_s, chartr_s, per_pass * passes


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
