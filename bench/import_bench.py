"""Benchmark: import_legacy_json at scale, next to a raw sqlite3 baseline measured in the same run.

    .venv/bin/python bench/import_bench.py                                # 1,000 agents / 100,000 rows
    .venv/bin/python bench/import_bench.py --agents 10000 --rows 1000000  # the full scale

Everything happens in a temp dir (legacy input, data dir, SQLite database),
removed at the end. It prints the import's rows/s (the whole run: validation,
backup copy, projects, workspaces, agents and rows) and the rows/s of a raw
``sqlite3`` ``executemany`` of the same rows, read and parsed from the same
JSONL files into a table with the same schema and indexes, in one transaction,
as a ratio; plus the peak RSS of the import and the time of an idempotent
second run. This is not a test: run it by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ITEM_TEXT = "Reading the repository layout and running the failing test to see the assertion. " * 2

BASE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
STAMP = BASE.isoformat().replace("+00:00", "Z")


def generate(source: Path, *, agents: int, rows: int, workspaces_per_project: int = 10) -> None:
    """A legacy home: one project per ``workspaces_per_project`` workspaces,
    one workspace per 10 agents, agent files in both layouts, and ``rows``
    timeline rows spread evenly over the agents."""
    workspace_count = max(1, agents // 10)
    workspaces = write_registry(source, workspace_count, max(1, workspace_count // workspaces_per_project))
    (source / "agents").mkdir()
    (source / "timelines").mkdir()
    per_agent, extra = divmod(rows, agents)
    for a in range(agents):
        cwd = workspaces[a % workspace_count]["cwd"]
        agent_id = f"agent-{a:06d}"
        folder = source / "agents" / cwd.strip("/").replace("/", "-") if a % 2 else source / "agents"
        folder.mkdir(exist_ok=True)
        (folder / f"{agent_id}.json").write_text(json.dumps(agent_record(agent_id, a, cwd)))
        write_timeline(source / "timelines" / f"{agent_id}.jsonl", agent_id, a, per_agent + (1 if a < extra else 0))


def write_registry(source: Path, workspace_count: int, project_count: int) -> list[dict]:
    """projects.json and workspaces.json; returns the workspaces."""
    common = {"createdAt": STAMP, "updatedAt": STAMP, "archivedAt": None}
    projects = [
        {"projectId": f"p{p}", "rootPath": f"/srv/code/project-{p}", "kind": "git", "displayName": f"project {p}"}
        | common
        for p in range(project_count)
    ]
    workspaces = [
        {
            "workspaceId": f"w{w}",
            "projectId": f"p{w % project_count}",
            "cwd": f"/srv/code/project-{w % project_count}/ws-{w}",
            "kind": "worktree",
            "displayName": f"ws {w}",
            "branch": f"feature-{w}",
        }
        | common
        for w in range(workspace_count)
    ]
    (source / "projects").mkdir(parents=True)
    (source / "projects" / "projects.json").write_text(json.dumps(projects))
    (source / "projects" / "workspaces.json").write_text(json.dumps(workspaces))
    return workspaces


def agent_record(agent_id: str, a: int, cwd: str) -> dict:
    return {
        "id": agent_id,
        "provider": "claude",
        "cwd": cwd,
        "createdAt": STAMP,
        "updatedAt": STAMP,
        "title": f"agent {a}",
        "labels": {"bench": "1"},
        "lastStatus": "idle",
        "config": {"model": "x"},
        "runtimeInfo": {},
        "persistence": {"provider": "claude", "sessionId": f"s-{a}"},
        "requiresAttention": False,
        "attentionReason": None,
        "attentionTimestamp": None,
        "internal": False,
        "archivedAt": None,
    }


def write_timeline(path: Path, agent_id: str, a: int, count: int) -> None:
    """A chartr timeline export: its header line, then ``count`` rows."""
    header = {"type": "chartr.timeline", "version": 1, "agent_id": agent_id, "epoch": f"e{a:06d}", "exported_at": STAMP}
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for seq in range(1, count + 1):
            row = {
                "seq": seq,
                "committed_at": (BASE + dt.timedelta(seconds=seq)).isoformat(),
                "item_id": f"i-{seq}",
                "item": {"type": "assistant_message", "text": ITEM_TEXT, "n": seq},
            }
            out.write(json.dumps(row) + "\n")


def raw_sqlite_baseline(source: Path, django_db: Path, target: Path) -> tuple[int, float]:
    """The same rows, read and parsed from the same files, inserted with one
    executemany per file into a table built from the import's own DDL."""
    with sqlite3.connect(django_db) as schema:
        ddl = [
            sql
            for (sql,) in schema.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'timeline_timelinerow' AND sql IS NOT NULL"
            )
        ]
    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    for statement in ddl:
        conn.execute(statement)
    insert = (
        "INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id) "
        "VALUES (?, ?, ?, ?, ?, ?)"
    )
    started = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    total = 0
    for path in sorted((source / "timelines").iterdir()):
        agent_id = path.stem

        def rows(path=path, agent_id=agent_id):
            with open(path, "rb") as handle:
                next(handle)
                for line in handle:
                    value = json.loads(line)
                    item = value["item"]
                    yield (
                        agent_id,
                        value["seq"],
                        value["committed_at"],
                        item["type"],
                        json.dumps(item),
                        value["item_id"],
                    )

        cursor = conn.executemany(insert, rows())
        total += cursor.rowcount
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return total, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="chartr-import-bench-"))
    os.environ["CHARTR_DATA_DIR"] = str(work / "data")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    os.environ.pop("DATABASE_URL", None)  # the baseline is SQLite, so the import is too
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chartr.settings")
    sys.path.insert(0, str(ROOT))
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        from legacy.services import import_legacy

        call_command("migrate", verbosity=0)
        source = work / "legacy home"
        started = time.perf_counter()
        generate(source, agents=args.agents, rows=args.rows)
        size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
        print(
            f"generated {args.agents:,} agents / {args.rows:,} rows ({size / 1e6:.0f} MB) "
            f"in {time.perf_counter() - started:.1f}s"
        )

        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        report = import_legacy(source=source)
        import_seconds = time.perf_counter() - started
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        assert report.counts["timeline_rows"].created == args.rows, report.counts_dict()
        assert report.counts["agents"].created == args.agents

        started = time.perf_counter()
        again = import_legacy(source=source)
        rerun_seconds = time.perf_counter() - started
        assert not again.changed_anything

        raw_rows, raw_seconds = raw_sqlite_baseline(
            source, Path(settings.DATABASES["default"]["NAME"]), work / "raw.sqlite3"
        )
        assert raw_rows == args.rows
        import_rate, raw_rate = args.rows / import_seconds, raw_rows / raw_seconds
        print(f"import_legacy:            {import_seconds:7.1f}s  {import_rate:9,.0f} rows/s")
        print(f"raw sqlite3 executemany:  {raw_seconds:7.1f}s  {raw_rate:9,.0f} rows/s")
        print(f"ratio (import / raw):     {import_rate / raw_rate:7.2f}")
        print(f"second run (no changes):  {rerun_seconds:7.1f}s")
        print(f"peak RSS: {peak_rss_mb:.0f} MB (before the import: {rss_before / 1024:.0f} MB)")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
