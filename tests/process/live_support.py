"""Real server processes and an SSE reader for the live-stream process tests.

Every server is gunicorn with the uvicorn worker (the production setup),
bound to port 0 on 127.0.0.1, with its own temp data/config dirs. Every loop
here is bounded in time and every process started is stopped.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_ADMIN_URL = os.environ.get("CHARTR_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("CHARTR_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")

SETUP_SCRIPT = """
import json, sys
from tokens.services import create_api_token
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
spec = json.loads(sys.argv[-1])
token = create_api_token(name="process-test")[1]
agents = []
for index, agent_id in enumerate(spec["agents"]):
    project = create_project(directory=f"/srv/live-test/p{index}", kind="git")
    workspace = create_workspace(project=project, directory=f"/srv/live-test/p{index}/w", kind="checkout")
    agents.append(create_agent(workspace=workspace, provider="claude", agent_id=agent_id).agent_id)
print("SETUP " + json.dumps({"token": token, "agents": agents}))
"""


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=3):
            return True
    except Exception:
        return False


def redis_available() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2).ping())
    except Exception:
        return False


class PostgresDatabase:
    """A throwaway database ``chartr_live_proc_<random>``, dropped on close."""

    def __init__(self):
        import psycopg

        self.name = f"chartr_live_proc_{secrets.token_hex(4)}"
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgres://", 1)
        self.url = f"{base}/{self.name}"

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class ServerProcess:
    def __init__(self, root: Path, *, database_url: str | None = None, env: dict | None = None, name: str = "srv"):
        self.root = root
        self.name = name
        self.database_url = database_url
        self.extra_env = env or {}
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path = root / f"{name}.log"

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "DATABASE_URL", "DJANGO_"))}
        env.update(
            CHARTR_DATA_DIR=str(self.root / "data"),
            XDG_CONFIG_HOME=str(self.root / "config"),
            CHARTR_SSE_KEEPALIVE_SECONDS="1",
            CHARTR_LOG_LEVEL="WARNING",
            CHARTR_ACCESS_LOG="0",
            PYTHONUNBUFFERED="1",
        )
        if self.database_url:
            env["DATABASE_URL"] = self.database_url
        env.update(self.extra_env)
        return env

    def manage(self, *args: str, timeout: float = 120) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def setup(self, agents: list[str]) -> dict:
        """Migrate and create a token and the agents; returns {"token", "agents"}."""
        self.manage("migrate", "--noinput", "-v", "0")
        return self.run_python(SETUP_SCRIPT, {"agents": agents})

    def run_python(self, script: str, arg: dict) -> dict:
        result = subprocess.run(
            [sys.executable, "-c", "import django; django.setup()\n" + script, json.dumps(arg)],
            cwd=ROOT,
            env={**self.env(), "DJANGO_SETTINGS_MODULE": "chartr.settings"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        for line in result.stdout.splitlines():
            if line.startswith(("SETUP ", "RESULT ")):
                return json.loads(line.split(" ", 1)[1])
        raise RuntimeError(f"script failed:\n{result.stdout}\n{result.stderr}")

    def start(self, *, timeout: float = 45) -> ServerProcess:
        log_start = len(self.log())
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "chartr.asgi:application",
                "-k",
                "uvicorn_worker.UvicornWorker",
                "-b",
                "127.0.0.1:0",
                "-w",
                "1",
                "--no-control-socket",
                "--graceful-timeout",
                "2",
                "--log-level",
                "info",
            ],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited:\n{self.log()}")
            if self.port is None:
                match = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", self.log()[log_start:])
                if match:
                    self.port = int(match.group(1))
            if self.port is not None:
                try:
                    # Any answer from Django (here a 401) means the worker is serving.
                    if httpx.get(self.url("/api/v1/agents/x/timeline/stream"), timeout=2).status_code == 401:
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start in {timeout}s:\n{self.log()}")

    def restart(self) -> ServerProcess:
        self.port = None
        return self.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL the whole server (arbiter and worker), as a crash would."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


@dataclass
class Event:
    event: str
    data: object
    id: str | None


class EventReader:
    """A minimal SSE client over an httpx streaming response."""

    def __init__(self, client: httpx.Client, url: str, *, token: str, last_event_id: str | None = None):
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self._context = client.stream("GET", url, headers=headers, timeout=httpx.Timeout(10, read=8))
        self.response = self._context.__enter__()
        self._lines = self.response.iter_lines()
        self.comments = 0

    def next(self) -> Event:
        """The next event (comments and retry lines are skipped, but counted)."""
        fields: dict[str, str] = {}
        data: list[str] = []
        for line in self._lines:
            if line == "":
                if data or "event" in fields:
                    return Event(fields.get("event", "message"), json.loads("\n".join(data)), fields.get("id"))
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value
        raise EOFError("stream ended")

    def next_comment(self) -> str:
        """The next comment line (keep-alives); fails if an event comes first."""
        for line in self._lines:
            if line.startswith(":"):
                self.comments += 1
                return line
            if line.startswith(("event:", "data:", "id:")):
                raise AssertionError(f"expected a comment, got {line!r}")
        raise EOFError("stream ended")

    def next_of(self, kind: str, *, timeout: float = 15) -> Event:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.next()
            if event.event == kind:
                return event
        raise TimeoutError(f"no {kind} event within {timeout}s")

    def close(self) -> None:
        self._context.__exit__(None, None, None)


def append(client: httpx.Client, server: ServerProcess, token: str, agent_id: str, items: list[dict]) -> httpx.Response:
    return client.post(
        server.url(f"/api/v1/agents/{agent_id}/timeline"),
        json={"items": items},
        headers={"Authorization": f"Bearer {token}"},
        timeout=15,
    )
