"""A restore while clients write through the real server: every acknowledged append survives
somewhere, in the restored state or in the pre-restore snapshot (the state the restore can be undone to).

The server runs two workers, the restores run in `manage.py restore` processes of their own, and the
writers only ever talk HTTP, so the write fence has to hold across processes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import GUNICORN, ScratchDatabase, Server, isolated_env, manage

pytestmark = pytest.mark.process

WRITERS = 4
RESTORES = 2
#: gunicorn as in tests.support.processes, with two workers: the fence must hold across server processes.
TWO_WORKERS = [sys.executable, *GUNICORN[: GUNICORN.index("-w") + 1], "2", *GUNICORN[GUNICORN.index("-w") + 2 :]]


class Writers:
    """Threads appending one item at a time, each with a unique item id, until stopped."""

    def __init__(self, server: Server, token: str):
        self.server = server
        self.headers = {"Authorization": f"Bearer {token}"}
        self.acknowledged: set[str] = set()
        self.refused: dict[str, int] = {}
        self.unexpected: list[str] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write, args=(n,), daemon=True) for n in range(WRITERS)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in self.threads)

    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)

    def _write(self, writer: int) -> None:
        url = self.server.url(f"/api/v1/agents/fence-{writer}/timeline")
        with httpx.Client(headers=self.headers, timeout=120) as client:
            index = 0
            while not self.stop.is_set():
                item_id = f"w{writer}-{index}"
                index += 1
                body = {"items": [{"item": {"type": "user_message", "text": item_id}, "item_id": item_id}]}
                response = client.post(url, json=body)
                with self.lock:
                    if response.status_code in (200, 201):
                        self.acknowledged.add(item_id)
                    elif response.status_code == 503:
                        code = response.json()["error"]["code"]
                        self.refused[code] = self.refused.get(code, 0) + 1
                        assert response.headers["Retry-After"].isdigit()
                    else:
                        self.unexpected.append(f"{item_id}: {response.status_code} {response.text[:200]}")
                if response.status_code == 503:
                    time.sleep(0.2)


def item_ids_in_snapshot(root: Path, database: ScratchDatabase, name: str) -> set[str]:
    """The item ids stored in data snapshot ``name``, read from the snapshot itself."""
    path = root / "data" / "snapshots" / name / "db"
    if database.engine == "sqlite":
        conn = sqlite3.connect(f"file:{path / 'chartr.sqlite3'}?mode=ro", uri=True)
        try:
            return {row[0] for row in conn.execute("SELECT item_id FROM timeline_timelinerow")}
        finally:
            conn.close()
    with ScratchDatabase("postgresql", root, purpose="fence_verify") as verify:
        subprocess.run(
            ["pg_restore", "--no-owner", f"--dbname={verify.url}", str(path / "chartr.pgdump")],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return {row[0] for row in verify.query("SELECT item_id FROM timeline_timelinerow")}


def set_up_agents(server: Server, token: str) -> None:
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        project = client.post("/api/v1/projects", json={"directory": "/srv/fence", "kind": "git"}).json()
        workspace = client.post(
            "/api/v1/workspaces", json={"project_id": project["id"], "directory": "/srv/fence", "kind": "checkout"}
        ).json()
        for writer in range(WRITERS):
            created = client.post(
                "/api/v1/agents",
                json={"agent_id": f"fence-{writer}", "workspace_id": workspace["id"], "provider": "test"},
            )
            assert created.status_code == 201, created.text


@pytest.mark.parametrize("maintenance_wait", ["20", "0"], ids=["writes-wait", "writes-refused"])
def test_every_append_acknowledged_during_a_restore_is_restored_or_in_the_pre_restore_snapshot(
    tmp_path, scratch_db, maintenance_wait
):
    """With a wait, writes queue behind the restore; without one, they get 503 `maintenance` and are retried."""
    database = scratch_db(migrated=True, purpose="fence")
    env = isolated_env(
        tmp_path,
        DJANGO_SETTINGS_MODULE="chartr.settings",
        CHARTR_SNAPSHOTS_KEEP="14",
        CHARTR_MAINTENANCE_WAIT=maintenance_wait,
        **database.env(),
    )
    server = Server(env, tmp_path / "server.log", command=TWO_WORKERS).start()
    try:
        token = manage("create_api_token", "fence", env=env, check=True).stdout.split()[-1]
        set_up_agents(server, token)
        base = manage("snapshot", env=env, check=True).stdout.split("Data snapshot ", 1)[1].split()[0]
        writers = Writers(server, token)
        writers.start()
        undo_snapshots = []
        try:
            for _ in range(RESTORES):
                before = writers.count()
                deadline = time.monotonic() + 60
                while writers.count() < before + 40 and time.monotonic() < deadline:
                    time.sleep(0.05)
                restored = manage("restore", "--from", base, env=env, timeout=300, check=True)
                undo_snapshots.append(restored.stdout.splitlines()[0].removeprefix("Pre-restore snapshot: "))
            after_restores = writers.count()
            deadline = time.monotonic() + 60
            while writers.count() < after_restores + 40 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            writers.finish()
    finally:
        server.stop()

    assert writers.unexpected == []
    if maintenance_wait == "0":
        assert writers.refused.get("maintenance", 0) > 0, writers.refused
    assert writers.count() >= 40 * (RESTORES + 1)
    live = {row[0] for row in database.query("SELECT item_id FROM timeline_timelinerow")}
    kept = set(live)
    for name in undo_snapshots:
        kept |= item_ids_in_snapshot(tmp_path, database, name)
    lost = sorted(writers.acknowledged - kept)
    assert lost == [], f"{len(lost)} acknowledged appends are in neither the restored state nor a pre-restore snapshot"
