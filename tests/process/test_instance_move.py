"""An instance moves from this run's engine to the other one and back (SQLite -> PostgreSQL -> SQLite
on the SQLite pass, the other way round on PostgreSQL's), and every API read is the same on each,
served by a real server. Needs both engines: without PostgreSQL it skips, except under CI."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx

from tests.portability.reads import NOT_FOUND, every_read, failed
from tests.support.processes import Server, isolated_env, manage, python, run_engine

OTHER = {"sqlite": "postgresql", "postgresql": "sqlite"}


class Instance:
    def __init__(self, database, root: Path):
        self.database = database
        self.root = root
        self.env = isolated_env(root, DJANGO_SETTINGS_MODULE="chartr.settings", **database.env())

    def manage(self, *args: str) -> str:
        result = manage(*args, env=self.env, check=True, timeout=300)
        return result.stdout + result.stderr

    def reads(self, raw_token: str) -> dict:
        with Server(self.env, self.root / "server.log", command="gunicorn") as server:
            client = httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {raw_token}"}, timeout=30
            )
            with client:

                def get(path: str):
                    response = client.get(path)
                    return response.status_code, response.json()

                return every_read(get)


def _records(path: Path) -> list[str]:
    """The export's lines but its header (which names the engine and the time)."""
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "chartr.instance"
    return lines[1:]


def test_an_instance_moves_to_the_other_engine_and_back_and_reads_the_same(tmp_path, scratch_db):
    first, other = run_engine(), OTHER[run_engine()]
    source = Instance(scratch_db(first, migrated=True, root=tmp_path / "a", purpose="move"), tmp_path / "a")
    moved = Instance(scratch_db(other, migrated=True, root=tmp_path / "b", purpose="move"), tmp_path / "b")
    back = Instance(scratch_db(first, migrated=True, root=tmp_path / "c", purpose="move"), tmp_path / "c")

    built = python("from tests.portability.builders import build_instance; print(build_instance())", env=source.env)
    assert built.returncode == 0, built.stderr
    raw_token = built.stdout.strip().splitlines()[-1]
    before = source.reads(raw_token)
    assert len(before) > 80 and failed(before) == NOT_FOUND

    there = tmp_path / "there.jsonl"
    source.manage("export_instance", str(there), "--with-tokens")
    imported = moved.manage("import_instance", str(there))
    # Not a terminal: one line per phase, no progress bar.
    assert "projects...\n" in imported and "timeline rows...\n" in imported and "\r" not in imported
    assert "Claude Code sessions...\n" in imported and "4 claude_code_session" in imported
    assert "content hash of each of 11 agent(s)" in imported
    assert moved.reads(raw_token) == before

    home = tmp_path / "back.jsonl.gz"
    moved.manage("export_instance", str(home), "--with-tokens")
    back.manage("import_instance", str(home))
    assert back.reads(raw_token) == before

    # The records themselves come out of the other engine exactly as they went in.
    assert gzip.decompress(home.read_bytes()).decode().splitlines()[1:] == _records(there)
