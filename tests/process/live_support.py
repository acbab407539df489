"""Real server processes and an SSE reader for the live-stream process tests.

Every server is gunicorn with the uvicorn worker (the production setup),
bound to port 0 on 127.0.0.1, with its own temp data/config dirs, started
through the shared harness in ``tests/support/processes.py``. Every loop
here is bounded in time and every process started is stopped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.processes import REDIS_URL, ScratchDatabase, Server, isolated_env, manage, python, redis_available

__all__ = ["REDIS_URL", "EventReader", "ServerProcess", "append", "redis_available"]

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


class ServerProcess(Server):
    """A gunicorn server for one test: its data/config dirs under ``root``, shared by the test's other servers."""

    def __init__(
        self,
        root: Path,
        *,
        database: ScratchDatabase | None = None,
        env: dict | None = None,
        name: str = "srv",
    ):
        self.root = root
        self.name = name
        self.database = database
        settings = {
            "CHARTR_SSE_KEEPALIVE_SECONDS": "1",
            "CHARTR_LOG_LEVEL": "WARNING",
            "CHARTR_ACCESS_LOG": "0",
            **(database.env() if database else {}),
            **(env or {}),
        }
        super().__init__(isolated_env(root, **settings), root / f"{name}.log", command="gunicorn", start_timeout=45)

    def manage(self, *args: str, timeout: float = 120) -> str:
        return manage(*args, env=self.env, timeout=timeout, check=True).stdout

    def setup(self, agents: list[str]) -> dict:
        """Migrate (unless the database came migrated) and create a token and the agents; returns {"token", "agents"}."""
        if self.database is None or not self.database.migrated:
            self.manage("migrate", "--noinput", "-v", "0")
        return self.run_python(SETUP_SCRIPT, {"agents": agents})

    def run_python(self, script: str, arg: dict) -> dict:
        result = python(script, json.dumps(arg), env=self.env)
        for line in result.stdout.splitlines():
            if line.startswith(("SETUP ", "RESULT ")):
                return json.loads(line.split(" ", 1)[1])
        raise RuntimeError(f"script failed:\n{result.stdout}\n{result.stderr}")


@dataclass
class Event:
    event: str
    data: object
    id: str | None


class EventReader:
    """A minimal SSE client over an httpx streaming response."""

    def __init__(self, client: httpx.Client, url: str, *, token: str | None, last_event_id: str | None = None):
        """``token`` None: no ``Authorization`` (a stream opened with ``?ticket=``)."""
        headers = {"Accept": "text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self._context = client.stream("GET", url, headers=headers, timeout=httpx.Timeout(10, read=8))
        self.response = self._context.__enter__()
        self._lines = self.response.iter_lines()
        self.comments = 0
        #: Checked at every comment (keep-alive): when it says so, ``next`` stops waiting with EOFError.
        self.stop_when = None

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
                if self.stop_when is not None and self.stop_when():
                    raise EOFError("stopped by the reader")
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
