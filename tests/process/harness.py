"""Start chartr's own commands as real processes, in throwaway data and config dirs.

Every wait is bounded in time and every process started here is stopped by
its own process group id.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "bin" / "chartr-entrypoint"
LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """The caller's environment minus chartr's settings, with data/config/static/home under ``root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL"))}
    env.update(
        {
            "CHARTR_DATA_DIR": str(root / "data"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "CHARTR_STATIC_ROOT": str(root / "static"),
            "HOME": str(root / "home"),
            "CHARTR_PYTHON": sys.executable,
            "CHARTR_BIND": "127.0.0.1:0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    (root / "home").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def wait_for(condition: Callable[[], object], *, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@dataclass
class Process:
    """A process in its own session, its output in a file so nothing blocks on a pipe."""

    args: list[str]
    env: dict[str, str]
    log_path: Path
    popen: subprocess.Popen = field(init=False)

    def __post_init__(self) -> None:
        self._log = open(self.log_path, "wb")
        self.popen = subprocess.Popen(
            self.args, env=self.env, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"{self.args} did not finish in {timeout}s:\n{self.output}") from None

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM the whole process group (gunicorn and its workers), SIGKILL if it lingers."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=5)
        self._log.close()
        return self.popen.returncode


def manage(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


@dataclass
class Server:
    process: Process
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **kwargs) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10, **kwargs)


def start_server(
    env: dict[str, str], log_path: Path, *, command: list[str] | None = None, timeout: float = 60
) -> Server:
    """Run the entrypoint (or ``command``) and wait until gunicorn listens and /readyz answers 200."""
    process = Process(command or [str(ENTRYPOINT)], env, log_path)

    def listening_port() -> int | None:
        match = LISTENING.search(process.output)
        if match:
            return int(match[1])
        if process.popen.poll() is not None:
            raise AssertionError(f"exited with {process.popen.returncode}")
        return None

    try:
        port = wait_for(listening_port, timeout=timeout, what="gunicorn to listen")
    except AssertionError as exc:
        process.stop()
        raise AssertionError(f"server did not start ({exc}):\n{process.output}") from None
    server = Server(process, port)

    def ready() -> bool:
        try:
            return server.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(ready, timeout=timeout, what="/readyz to answer 200")
    except AssertionError:
        process.stop()
        raise AssertionError(f"server never became ready:\n{process.output}") from None
    return server
