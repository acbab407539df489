"""Real processes for the tests and the benchmarks: one place that starts chartr's own commands.

- ``isolated_env(root)``: the caller's environment minus chartr's settings, with
  data/config/static/home dirs under ``root``.
- ``manage(*args, env=...)``: ``manage.py`` in a subprocess.
- ``Process``: any command in its own session, output in a log file.
- ``Server``: gunicorn (through ``bin/chartr-entrypoint`` as deployed, or
  directly with one uvicorn worker) on a port the kernel picks; waits for
  ``/readyz`` to answer 200; stop (SIGTERM), kill (SIGKILL) and restart.
- ``ScratchDatabase``: a SQLite file, or a uniquely named PostgreSQL database
  created and dropped, optionally cloned from a migrated template (a copied
  file on SQLite, ``CREATE DATABASE ... TEMPLATE`` on PostgreSQL) so a test
  need not migrate again.

Every wait is bounded in time and every process started here is stopped by
its own process group id. Nothing here imports Django: the benchmark imports
this module before it configures Django, and the processes it starts read
their settings from the environment they are given.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from chartr import config

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "bin" / "chartr-entrypoint"
LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = config.value("CHARTR_TEST_REDIS_URL")

#: gunicorn as the live-stream tests and the benchmark run it: the production
#: worker class, one worker, a short grace period so stopping is quick.
GUNICORN = [
    "-m",
    "gunicorn",
    "chartr.asgi:application",
    "-k",
    "chartr.workers.DrainingUvicornWorker",
    "-b",
    "127.0.0.1:0",
    "-w",
    "1",
    "--no-control-socket",
    "--graceful-timeout",
    "2",
    "--log-level",
    "info",
]


# --- environment and one-shot commands -------------------------------------


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """The caller's environment minus chartr's settings, with data/config/static/home under ``root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL", "DJANGO_"))}
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


def wait_for(condition: Callable[[], object], *, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def manage(*args: str, env: dict[str, str], timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    """``manage.py ARGS`` in a subprocess; with ``check``, a non-zero exit fails with its output."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"manage.py {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result


def python(script: str, *args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -c SCRIPT ARGS`` with Django set up first."""
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + script, *args],
        env={"DJANGO_SETTINGS_MODULE": "chartr.settings", **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- long-running processes ------------------------------------------------


def group_members(pgid: int) -> list[str]:
    """The command lines of every live process in process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != pgid:
                continue
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue  # a zombie is already gone, waiting for its parent to reap it
            found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue
    return found


class Process:
    """A process in its own session, its output appended to a file so nothing blocks on a pipe."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path):
        self.args = args
        self.env = env
        self.log_path = log_path
        self._offset = log_path.stat().st_size if log_path.exists() else 0
        self._log = open(log_path, "ab")
        self.popen = subprocess.Popen(
            args, env=env, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def output(self) -> str:
        """What this process wrote (not earlier runs that shared the log file)."""
        with open(self.log_path, "rb") as log:
            log.seek(self._offset)
            return log.read().decode(errors="replace")

    def running(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"{self.args} did not finish in {timeout}s:\n{self.output}") from None

    def signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.popen.pid, signum)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM the whole process group (gunicorn and its workers), SIGKILL if it lingers."""
        if self.popen.poll() is None:
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
        return self.popen.returncode

    def kill(self) -> int:
        """SIGKILL the whole process group, as a crash would."""
        if self.popen.poll() is None:
            self.signal_group(signal.SIGKILL)
            self.popen.wait(timeout=10)
        self._log.close()
        return self.popen.returncode


class Server:
    """chartr served by gunicorn on 127.0.0.1 and a port the kernel picks.

    ``command`` is ``"entrypoint"`` (``bin/chartr-entrypoint``: migrate, first
    admin, collectstatic, then gunicorn with gunicorn.conf.py, as deployed),
    ``"gunicorn"`` (gunicorn alone with one uvicorn worker; the database must
    be migrated already), or an explicit argument list. ``start`` returns once
    gunicorn listens and ``/readyz`` answers 200.
    """

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        *,
        command: str | list[str] = "entrypoint",
        start_timeout: float = 60,
    ):
        self.env = env
        self.log_path = log_path
        if command == "entrypoint":
            command = [str(ENTRYPOINT)]
        elif command == "gunicorn":
            command = [sys.executable, *GUNICORN]
        self.command = list(command)
        self.start_timeout = start_timeout
        self.process: Process | None = None
        self.port: int | None = None

    # addresses
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        return self.base_url + path

    def get(self, path: str, **kwargs) -> httpx.Response:
        return httpx.get(self.url(path), timeout=10, **kwargs)

    # output
    @property
    def output(self) -> str:
        """The log of the current (or last) run."""
        return self.process.output if self.process else ""

    def log(self) -> str:
        """The whole log file, every run."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # lifecycle
    def launch(self) -> Server:
        """Start the process and return at once; ``wait_ready`` waits for it."""
        self.port = None
        self.process = Process(self.command, self.env, self.log_path)
        return self

    def wait_ready(self, timeout: float | None = None) -> Server:
        timeout = timeout or self.start_timeout
        deadline = time.monotonic() + timeout
        process = self.process

        def listening_port() -> int | None:
            match = LISTENING.search(process.output)
            if match:
                return int(match[1])
            if not process.running():
                raise AssertionError(f"exited with {process.popen.returncode}")
            return None

        def ready() -> bool:
            if not process.running():
                raise AssertionError(f"exited with {process.popen.returncode}")
            try:
                return self.get("/readyz").status_code == 200
            except httpx.TransportError:
                return False

        try:
            self.port = wait_for(listening_port, timeout=timeout, what="gunicorn to listen")
            wait_for(ready, timeout=max(deadline - time.monotonic(), 1), what="/readyz to answer 200")
        except AssertionError as exc:
            process.stop()
            raise AssertionError(f"server did not start ({exc}):\n{process.output}") from None
        return self

    def start(self, timeout: float | None = None) -> Server:
        return self.launch().wait_ready(timeout)

    def stop(self, timeout: float = 15) -> int | None:
        return self.process.stop(timeout) if self.process else None

    def kill(self) -> int | None:
        """SIGKILL the arbiter and its workers, as a crash would."""
        return self.process.kill() if self.process else None

    def restart(self, timeout: float | None = None) -> Server:
        self.stop()
        return self.start(timeout)

    def __enter__(self) -> Server:
        return self if self.process else self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def start_together(*servers: Server) -> None:
    """Start several servers at once (their start-ups overlap) and wait until each is ready."""
    for server in servers:
        server.launch()
    try:
        for server in servers:
            server.wait_ready()
    except BaseException:
        for server in servers:
            server.stop()
        raise


def start_server(env: dict[str, str], log_path: Path, *, command: str | list[str] = "entrypoint", timeout: float = 60):
    return Server(env, log_path, command=command).start(timeout)


# --- scratch databases -----------------------------------------------------


def run_engine() -> str:
    """The database this run is on: "postgresql" when DATABASE_URL points at PostgreSQL, else "sqlite"."""
    return "postgresql" if os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")) else "sqlite"


def with_dbname(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def libpq_url(url: str) -> str:
    """``url`` without the query options libpq does not know (``prepare_threshold``, say: a
    psycopg connection option Django takes from DATABASE_URL), so psycopg can connect with it."""
    from psycopg import pq

    known = {option.keyword.decode() for option in pq.Conninfo.get_defaults()}
    parts = urlsplit(url)
    query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key in known]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _database_url_options() -> str:
    """The query options of this run's DATABASE_URL, which every scratch database's URL carries too."""
    return urlsplit(os.environ["DATABASE_URL"]).query if run_engine() == "postgresql" else ""


def postgres_admin_url() -> str:
    """The maintenance database of the PostgreSQL server scratch databases live on.

    ``CHARTR_TEST_POSTGRES_URL`` if set, else the server of this run's
    DATABASE_URL, else the local default (127.0.0.1:5432, user postgres).
    Only libpq's options are kept: the URL is psycopg's to connect with.
    """
    explicit = os.environ.get("CHARTR_TEST_POSTGRES_URL")
    if explicit:
        return libpq_url(explicit)
    if run_engine() == "postgresql":
        return libpq_url(with_dbname(os.environ["DATABASE_URL"], "postgres"))
    return DEFAULT_POSTGRES_URL


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(postgres_admin_url(), connect_timeout=3):
            return True
    except Exception:
        return False


def redis_available() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2).ping())
    except Exception:
        return False


def postgres_admin(*statements: str, admin_url: str | None = None) -> None:
    import psycopg

    with psycopg.connect(admin_url or postgres_admin_url(), autocommit=True, connect_timeout=5) as conn:
        for statement in statements:
            conn.execute(statement)


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (its WAL included) through the backup API."""
    target.parent.mkdir(parents=True, exist_ok=True)
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


class ScratchDatabase:
    """A throwaway database for real processes; a context manager that creates and drops it.

    On SQLite it is the file ``path`` (by default ``<root>/data/chartr.sqlite3``,
    where chartr looks without DATABASE_URL). On PostgreSQL it is
    ``chartr_<purpose>_<random>`` on the server of ``postgres_admin_url()``,
    dropped WITH (FORCE) on exit. ``template`` (another ScratchDatabase,
    migrated) makes this one a copy of it instead of an empty database.
    """

    def __init__(
        self,
        engine: str,
        root: Path,
        *,
        purpose: str = "scratch",
        path: Path | None = None,
        template: ScratchDatabase | None = None,
    ):
        assert engine in ("sqlite", "postgresql"), engine
        assert template is None or template.engine == engine
        self.engine = engine
        self.root = root
        self.template = template
        self.path = (path or root / "data" / "chartr.sqlite3") if engine == "sqlite" else None
        self.name = f"chartr_{purpose}_{secrets.token_hex(4)}" if engine == "postgresql" else None
        self.admin_url = postgres_admin_url() if engine == "postgresql" else None
        self.options = _database_url_options() if engine == "postgresql" else ""
        self.created = False
        #: True once every migration is applied (a clone of a migrated template is).
        self.migrated = template is not None and template.migrated

    @property
    def url(self) -> str:
        if self.engine == "sqlite":
            return f"sqlite:///{self.path}"
        url = urlsplit(with_dbname(self.admin_url, self.name).replace("postgresql://", "postgres://", 1))
        # The run's own connection options (DATABASE_URL's prepare_threshold, say) go with it.
        return urlunsplit(url._replace(query=self.options or url.query))

    def env(self) -> dict[str, str]:
        """What to add to the environment of a process whose data dir is ``<root>/data`` to use this database.

        Nothing for SQLite at ``<root>/data/chartr.sqlite3``: chartr finds it
        there by itself, as it does when served without DATABASE_URL.
        """
        if self.engine == "sqlite" and self.path == self.root / "data" / "chartr.sqlite3":
            return {}
        return {"DATABASE_URL": self.url}

    def create(self) -> ScratchDatabase:
        if self.engine == "sqlite":
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self.template is not None:
                copy_sqlite(self.template.path, self.path)
        else:
            clone = f' TEMPLATE "{self.template.name}"' if self.template is not None else ""
            postgres_admin(f'CREATE DATABASE "{self.name}"{clone}', admin_url=self.admin_url)
        self.created = True
        return self

    def drop(self) -> None:
        if not self.created:
            return
        self.created = False
        if self.engine == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        else:
            postgres_admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)', admin_url=self.admin_url)

    def migrate(self) -> ScratchDatabase:
        """Apply every migration, in a ``manage.py migrate`` process of its own."""
        env = isolated_env(self.root / "migrate", DATABASE_URL=self.url)
        manage("migrate", "--noinput", "-v", "0", env=env, check=True)
        self.migrated = True
        return self

    def query(self, sql: str) -> list[tuple]:
        if self.engine == "sqlite":
            conn = sqlite3.connect(self.path, timeout=20)
            try:
                return conn.execute(sql).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(libpq_url(self.url), connect_timeout=5) as conn:
            return conn.execute(sql).fetchall()

    def __enter__(self) -> ScratchDatabase:
        return self.create()

    def __exit__(self, *exc_info) -> None:
        self.drop()


class MigratedTemplates:
    """One migrated database per engine, migrated on first use and cloned for each test that asks."""

    def __init__(self, root: Path):
        self.root = root
        self._templates: dict[str, ScratchDatabase] = {}

    def get(self, engine: str) -> ScratchDatabase:
        if engine not in self._templates:
            template = ScratchDatabase(engine, self.root / engine, purpose="template")
            template.create()
            try:
                template.migrate()
            except BaseException:
                template.drop()
                raise
            self._templates[engine] = template
        return self._templates[engine]

    def clone(self, engine: str, root: Path, **kwargs) -> ScratchDatabase:
        return ScratchDatabase(engine, root, template=self.get(engine), **kwargs)

    def drop_all(self) -> None:
        for template in self._templates.values():
            template.drop()
        self._templates.clear()
        shutil.rmtree(self.root, ignore_errors=True)
