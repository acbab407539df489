"""Data snapshots across process boundaries: real `manage.py` processes against a real database
(a SQLite file in a temp data dir; a scratch PostgreSQL database when DATABASE_URL is postgres)
while another process keeps appending timeline rows."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from datadir.lock import store_lock, store_lock_path
from tests.support.processes import REPO, ScratchDatabase, isolated_env, manage, run_engine

pytestmark = pytest.mark.process

INVARIANTS = """
SELECT a.agent_id, a.head_seq, count(t.id), coalesce(max(t.seq), 0), coalesce(min(t.seq), 0)
FROM timeline_head a LEFT JOIN timeline_timelinerow t ON t.agent_id = a.agent_id
GROUP BY a.agent_id, a.head_seq ORDER BY a.agent_id
"""


def check_timelines(rows) -> list[str]:
    """Every agent's rows are exactly seq 1..head_seq."""
    problems = []
    for agent_id, head, count, top, bottom in rows:
        if not (count == head == top and (head == 0 or bottom == 1)):
            problems.append(f"{agent_id}: head_seq {head}, {count} rows, seq {bottom}..{top}")
    return problems


@dataclass
class Store:
    """A data dir (and database) that real processes share."""

    database: ScratchDatabase
    children: list[subprocess.Popen] = field(default_factory=list)

    @property
    def engine(self) -> str:
        return self.database.engine

    @property
    def root(self) -> Path:
        return self.database.root

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def env(self) -> dict[str, str]:
        return isolated_env(
            self.root, DJANGO_SETTINGS_MODULE="chartr.settings", CHARTR_SNAPSHOTS_KEEP="14", **self.database.env()
        )

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return manage(*args, env=self.env, timeout=timeout)

    def spawn(self, *args: str) -> subprocess.Popen:
        child = subprocess.Popen(
            [sys.executable, *args], cwd=REPO, env=self.env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.children.append(child)
        return child

    def query(self, sql: str) -> list[tuple]:
        return self.database.query(sql)

    def snapshot_names(self) -> list[str]:
        root = self.data_dir / "snapshots"
        return sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []

    def stop_children(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
            for stream in (child.stdout, child.stderr):
                if stream:
                    stream.close()


@pytest.fixture
def sqlite_store(scratch_db) -> Store:
    """A copy of a migrated SQLite database in a fresh data dir."""
    store = Store(scratch_db("sqlite", migrated=True))
    yield store
    store.stop_children()


@pytest.fixture(params=[run_engine()])
def any_store(request, scratch_db):
    """This run's engine: CI's SQLite pass runs the SQLite variant, its PostgreSQL pass the PostgreSQL one."""
    if request.param == "sqlite":
        yield request.getfixturevalue("sqlite_store")
        return
    store = Store(scratch_db("postgresql", migrated=True, purpose="datasnap"))
    try:
        yield store
    finally:
        store.stop_children()


def wait_for_line(child: subprocess.Popen, wanted: str, timeout: float) -> None:
    seen: list[str] = []

    def read():
        for line in child.stdout:
            seen.append(line.strip())
            if line.strip() == wanted:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    assert wanted in seen, f"no {wanted!r} within {timeout}s; exit {child.poll()}, saw {seen}"


def snapshot_name(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout.split("Data snapshot ", 1)[1].split()[0]


def snapshot_timelines(store: Store, name: str) -> tuple[list[tuple], dict]:
    """The per-agent invariant rows inside a snapshot, read from the snapshot itself."""
    path = store.data_dir / "snapshots" / name
    manifest = json.loads((path / "manifest.json").read_text())
    if store.engine == "sqlite":
        conn = sqlite3.connect(f"file:{path / 'db' / 'chartr.sqlite3'}?mode=ro", uri=True)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            counts = {
                t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in manifest["database"]["tables"]
            }
            return conn.execute(INVARIANTS).fetchall(), counts
        finally:
            conn.close()
    with ScratchDatabase("postgresql", store.root, purpose="datasnap_verify") as verify:
        subprocess.run(
            ["pg_restore", "--no-owner", f"--dbname={verify.url}", str(path / "db" / "chartr.pgdump")],
            check=True,
            capture_output=True,
            timeout=120,
        )
        counts = {t: verify.query(f'SELECT count(*) FROM "{t}"')[0][0] for t in manifest["database"]["tables"]}
        return verify.query(INVARIANTS), counts


def test_snapshot_and_restore_while_appends_run_stay_consistent(any_store):
    store = any_store
    seed = subprocess.run(
        [sys.executable, "-m", "tests.process.appender", "seed", "4"],
        cwd=REPO,
        env=store.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seed.returncode == 0, seed.stderr
    stopfile = store.root / "stop-appending"
    appender = store.spawn("-m", "tests.process.appender", "append", "90", str(stopfile))
    try:
        wait_for_line(appender, "ready", timeout=60)
        first = snapshot_name(store.manage("snapshot"))
        rows_at_first = store.query("SELECT count(*) FROM timeline_timelinerow")[0][0]
        epochs_before = dict(store.query("SELECT agent_id, epoch FROM timeline_head"))
        restored = store.manage("restore", "--from", first)
        assert restored.returncode == 0, restored.stderr
        undo = restored.stdout.splitlines()[0].removeprefix("Pre-restore snapshot: ")
        time.sleep(0.5)  # let the appender write on top of the restored state
    finally:
        stopfile.touch()
    out, err = appender.communicate(timeout=60)
    report = json.loads(out.strip().splitlines()[-1])
    # No transaction of the appender ever saw a torn timeline, before, during or after the restore.
    assert report["violations"] == [], report
    assert report["errors"] == 0, err[-2000:]
    assert report["batches"] > 20

    for name in (first, undo):
        invariant_rows, counts = snapshot_timelines(store, name)
        assert len(invariant_rows) == 4
        assert check_timelines(invariant_rows) == []
        manifest = json.loads((store.data_dir / "snapshots" / name / "manifest.json").read_text())
        assert counts == manifest["database"]["tables"]  # the counts were taken from the same snapshot
        assert counts["timeline_timelinerow"] > 0
    assert counts["timeline_timelinerow"] >= rows_at_first  # the pre-restore snapshot came later

    live = store.query(INVARIANTS)
    assert check_timelines(live) == []
    epochs_after = dict(store.query("SELECT agent_id, epoch FROM timeline_head"))
    assert set(epochs_after) == set(epochs_before)
    assert all(epochs_after[agent] != epochs_before[agent] for agent in epochs_before)


def blocked_waiters(lock_file: Path) -> int:
    """How many processes wait for a flock on ``lock_file`` ("->" lines in /proc/locks)."""
    inode = lock_file.stat().st_ino
    return sum(
        1
        for line in Path("/proc/locks").read_text().splitlines()
        if "->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{inode}")
    )


def test_concurrent_snapshots_serialise_on_the_store_lock(sqlite_store):
    store = sqlite_store
    lock_file = store_lock_path(store.data_dir)
    with store_lock(data_dir=store.data_dir):
        refused = store.manage("snapshot", "--no-wait")
        assert refused.returncode == 1
        assert f"Another data snapshot or restore is running (pid {os.getpid()})" in refused.stderr
        assert store.snapshot_names() == []

        waiting = [store.spawn("manage.py", "snapshot") for _ in range(2)]
        deadline = time.monotonic() + 60
        while blocked_waiters(lock_file) < 2 and time.monotonic() < deadline:
            assert all(child.poll() is None for child in waiting)
            time.sleep(0.1)
        assert blocked_waiters(lock_file) == 2
        assert store.snapshot_names() == []
    results = [child.communicate(timeout=120) for child in waiting]
    assert [child.returncode for child in waiting] == [0, 0], results
    first, second = store.snapshot_names()
    # The second ran after the first had finished, so it saw it as its predecessor.
    manifest = json.loads((store.data_dir / "snapshots" / second / "manifest.json").read_text())
    assert manifest["changes"]["previous"] == first


def test_the_kernel_releases_the_lock_when_its_holder_dies(sqlite_store):
    store = sqlite_store
    holder = store.spawn(
        "-c",
        "import sys, time; from pathlib import Path; from datadir.lock import store_lock\n"
        "with store_lock(data_dir=Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(60)",
        str(store.data_dir),
    )
    wait_for_line(holder, "locked", timeout=30)
    busy = store.manage("snapshot", "--no-wait")
    assert busy.returncode == 1 and f"(pid {holder.pid})" in busy.stderr
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    taken = store.manage("snapshot", "--no-wait")
    assert taken.returncode == 0, taken.stderr
    assert len(store.snapshot_names()) == 1


def test_restore_command_refuses_a_corrupt_snapshot_and_changes_nothing(sqlite_store):
    store = sqlite_store
    seed = subprocess.run(
        [sys.executable, "-m", "tests.process.appender", "seed", "2"],
        cwd=REPO,
        env=store.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seed.returncode == 0, seed.stderr
    name = snapshot_name(store.manage("snapshot"))
    db = store.data_dir / "snapshots" / name / "db" / "chartr.sqlite3"
    db.write_bytes(db.read_bytes()[:8192])
    before = store.query("SELECT agent_id, epoch, head_seq FROM timeline_head")
    result = store.manage("restore", "--from", name)
    assert result.returncode == 1
    assert f"Data snapshot {name} is missing parts or corrupt" in result.stderr
    assert "nothing was changed" in result.stderr
    assert store.query("SELECT agent_id, epoch, head_seq FROM timeline_head") == before
    assert store.snapshot_names() == [name]
