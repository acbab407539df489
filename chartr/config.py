"""Every environment variable chartr reads, declared once in ``VARIABLES``: its kind, range, default and meaning.

``load()`` parses them all through ``environ.Env.parse_value`` (django-environ),
each by its kind and range, and checks the rules that tie several together;
``value(name)`` reads one. A value its kind refuses, a ``CHARTR_*`` name not in
the table, or a combination that cannot work raises :class:`ConfigError`
naming each variable, its value and what is allowed. ``chartr/settings.py``
(every ``manage.py`` command and server worker) and ``gunicorn.conf.py`` call
``load()``; an empty value is an unset one. docs/configuration.md's table is
generated from ``VARIABLES``: ``python -m chartr.config [--write]``.
Nothing of Django but its exception is imported, so gunicorn's config can use it.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import sys
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

from kernel.live_transport import effective_transport

#: Worker processes by default when live updates cross processes: 2 per CPU, at most this.
MAX_DEFAULT_WORKERS = 8
MIB, DAY = 1024 * 1024, 86400


class ConfigError(ImproperlyConfigured):
    """One or more environment variables are wrong; the message names each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        count = "a setting is" if len(problems) == 1 else f"{len(problems)} settings are"
        lines = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(
            f"chartr cannot start: {count} wrong (environment or <config dir>/chartr.env; docs/configuration.md):\n{lines}"
        )


def number_text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


@dataclass(frozen=True)
class Kind:
    """What a variable accepts, in the words of the docs and the error (``allowed``).

    The raw value (each comma-separated item when ``cast`` is a list) must match
    ``pattern`` whole; ``environ.Env.parse_value`` casts it; the result must lie
    in ``low``..``high`` and pass ``check``. ``samples``: a value it accepts and
    values it refuses, for the test that walks every variable.
    """

    allowed: str
    pattern: str
    cast: Any = str
    low: float | None = None
    high: float | None = None
    check: Callable[[Any], object] = lambda parsed: True
    samples: tuple[str, tuple[str, ...]] = ("", ())

    def parse(self, raw: str) -> Any:
        items = raw.split(",") if isinstance(self.cast, list) else [raw]
        if not all(re.fullmatch(self.pattern, item.strip()) for item in items):
            raise ValueError
        try:
            parsed = environ.Env.parse_value(raw, self.cast)
            ok = (self.low is None or self.low <= parsed <= self.high) and self.check(parsed)
        except Exception:
            raise ValueError from None
        if not ok:
            raise ValueError
        return parsed


def integer(low: int, high: int, unit: str = "") -> Kind:
    allowed = f"an integer from {low} to {high}" + (f" ({unit})" if unit else "")
    refused = (str(low - 1), str(high + 1), "1.5", f"{low}x")
    return Kind(allowed, r"[+-]?[0-9]+", int, low, high, samples=(str(high), refused))


def seconds(low: float, high: float) -> Kind:
    allowed = f"seconds, a number from {number_text(low)} to {number_text(high)} (no unit suffix)"
    refused = ("-1" if low == 0 else number_text(low / 2), number_text(high + 1), "5m", "5s", "nan")
    return Kind(allowed, r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)", float, low, high, samples=(number_text(high), refused))


def choice(*values: str, any_case: bool = False) -> Kind:
    allowed = "one of " + ", ".join(f"`{value}`" for value in values) + (" (any case)" if any_case else "")
    first = values[0]
    refused = (first + "x", first[:-1]) if any_case else (first + "x", first[:-1], first.capitalize())
    accepted = first.upper() if any_case else first
    pattern = ("(?i)" if any_case else "") + "|".join(values)
    return Kind(allowed, pattern, str.lower if any_case else str, samples=(accepted, refused))


def comma_list(noun: str, each: str, item: str, valid: str, *refused: str) -> Kind:
    return Kind(f"comma-separated {noun}, each {each}", item, [str.strip], samples=(valid, refused))


# fmt: off
BOOLEAN = Kind("`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off` (any case)", r"(?i)true|false|1|0|yes|no|on|off", bool, samples=("Yes", ("ture", "2", "-1", "ok")))
PATH = Kind("an absolute path (`~` allowed)", r"[/~][^\n]*", samples=("/srv/chartr", ("relative/dir", "./here")))
PROGRAM = Kind("a program name on `PATH` or an absolute path to one", r"[\w.+-]+|/\S+", samples=("python3", ("python 3", "bin/python")))
SECRET = Kind("at least 16 characters", r"[^\n]{16,}", samples=("a-long-enough-secret", ("short",)))
CHANNEL = Kind("1 to 63 of `A-Z a-z 0-9 _`", r"\w{1,63}", check=str.isascii, samples=("chartr_live_prod", ("my channel", "x" * 64)))
PASSWORD = Kind("a password of 1 to 99 printable characters, no spaces", r"\S{1,99}", samples=("s3cret", ("two words",)))
HOSTS = comma_list("host names", "a host name, an IP address, `[IPv6]`, `.domain` or `*`", r"\*|\.?[\w.-]+|\[[0-9A-Fa-f:.]+\]", "chartr.example.com,.example.org", "a b", "x,,y")
ORIGINS = comma_list("origins", "an origin with its scheme, e.g. `https://chartr.example.com`", r"https?://[^/?#\s,]+/?", "https://chartr.example.com", "chartr.example.com")
BINDS = replace(comma_list("addresses", "`HOST:PORT`, `[IPv6]:PORT`, `unix:/path` or `fd://N`", r"unix:/\S+|fd://[0-9]+|(\[[0-9A-Fa-f:.]+\]|[\w.-]+):[0-9]{1,5}", "0.0.0.0:9000,unix:/run/chartr.sock", "8000", "localhost:70000"),
                check=lambda binds: all(b.startswith(("unix:", "fd:")) or int(b.rsplit(":", 1)[1]) <= 65535 for b in binds))
PROXIES = Kind("`*`, or comma-separated IP addresses or networks (CIDR)", r"\*|[0-9A-Fa-f:./, ]+", samples=("10.0.0.2,192.168.0.0/16", ("10.0.0.300", "a,,b")),
               check=lambda raw: raw == "*" or all(ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",")))
RATE = Kind("`<requests>/<period>`, requests at least 1, period `s`, `m`, `h` or `d` (or `second`, `minute`, `hour`, `day`)",
            r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", samples=("600/m", ("600", "0/m", "600/w", "10/minutes", "ten/m")))
REDIS_URL = Kind("`redis://[:password@]host[:port][/db]`, `rediss://...` (TLS) or `unix:///path`", r"rediss?://([^@/\s]*@)?(\[[0-9A-Fa-f:.]+\]|[^@/:\s]+)(:[0-9]+)?(/[0-9]*)?|unix://\S+",
                 check=lambda url: urlsplit(url).port or True,  # urlsplit refuses a port over 65535
                 samples=("redis://127.0.0.1:6379/0", ("127.0.0.1:6379", "redsi://localhost", "redis://localhost:99999/0")))
DATABASE_URL = Kind("`sqlite:////absolute/path` or `postgres://user:password@host:port/name`", r"(sqlite|postgres|postgresql|pgsql|psql)://.*", environ.Env.db_url_config,
                    samples=("postgres://chartr@db.example:5432/chartr", ("mysql://u@h/x", "postgress://u@h/x", "/data/db.sqlite3")))
TIME_ZONE = Kind("an IANA time zone name, e.g. `UTC` or `Europe/Paris`", r"[\w+/-]+", check=zoneinfo.ZoneInfo, samples=("Europe/Paris", ("Mars/Olympus", "utc+2")))
WORKER_CLASS = Kind("`gthread`, `sync`, `asgi` (gunicorn's names) or a dotted path to a worker class", r"sync|eventlet|gevent|tornado|gthread|asgi|[A-Za-z_]\w*(\.[A-Za-z_]\w*)+",
                    samples=("gthread", ("gthreads", "chartr.workers.", "uvicorn worker")))
# fmt: on
LOG_LEVEL = choice("debug", "info", "warning", "error", "critical", any_case=True)


@dataclass(frozen=True)
class Variable:
    name: str
    kind: Kind
    #: The parsed value when the variable is unset or empty.
    default: Any
    meaning: str
    read_by: str = "settings"
    #: How docs/configuration.md shows the default, when ``default`` alone would not say it.
    default_doc: str = ""
    group: str = ""


def _grouped(*rows: str | Variable) -> tuple[Variable, ...]:
    """The variables, each with the title of the group (a string row) above it."""
    group, variables = "", []
    for row in rows:
        if isinstance(row, str):
            group = row
        else:
            variables.append(replace(row, group=group))
    return tuple(variables)


V, G = Variable, "gunicorn"
VARIABLES: tuple[Variable, ...] = _grouped(
    "Paths & secrets",
    V("CHARTR_DATA_DIR", PATH, None, "the data dir: SQLite database, migration lock, data snapshots, legacy-import backups ([persistence.md](persistence.md)). `manage.py migrate` creates it; every other command refuses to run without it on SQLite", "settings (`chartr/paths.py`)", "`$XDG_DATA_HOME/chartr`, else `~/.local/share/chartr` (image: `/data`)"),
    V("CHARTR_SECRET_KEY", SECRET, "", "Django's `SECRET_KEY`; set it to use your own (then nothing is written)", default_doc="generated by `manage.py migrate` (or the server's start) into `<config dir>/secret_key` (mode 0600)"),
    "Database",
    V("DATABASE_URL", DATABASE_URL, None, "the database. gunicorn looks at it too, to pick the default worker count", "settings, gunicorn", "`sqlite:///<data dir>/chartr.sqlite3`"),
    V("CHARTR_SQLITE_TIMEOUT", integer(0, 3600, "seconds"), 20, "SQLite only: seconds a writer waits for the write lock before \"database is locked\" (inside one process writers also wait their turn in arrival order, for at most as long: `kernel/db_backends/sqlite3/writer_turns.py`)"),
    V("CHARTR_CONN_MAX_AGE", integer(0, DAY, "seconds"), 60, "seconds a server thread keeps its database connection between requests (0 = a new one per request)"),
    V("CHARTR_SYNC_THREADS", integer(1, 256), 8, "threads (and so database connections) per worker process for everything but the live stream: API, admin, probes (`chartr/asgi.py`)"),
    V("CHARTR_GROUP_COMMIT", BOOLEAN, True, "concurrent timeline appends of one worker process commit together: one transaction per batch, each append in a savepoint of its own, every answer sent after the COMMIT (`timeline/writes/group_commit.py`, [timeline.md](timeline.md#appending)). Off gives every append its own transaction"),
    "Locale & static files",
    V("CHARTR_TIME_ZONE", TIME_ZONE, "UTC", "Django's `TIME_ZONE`: the zone the API renders times in, and the admin's for an operator whose browser names none (the admin follows each browser's zone, docs/operations.md); the database stores UTC either way"),
    V("CHARTR_STATIC_ROOT", PATH, None, "where `collectstatic` writes and the server serves static files from", default_doc="`<checkout>/staticfiles` (image: `/app/staticfiles`)"),
    "Limits & API",
    V("CHARTR_MAX_BODY_BYTES", integer(1024, 1024 * MIB, "bytes"), MIB, "request bodies above this get 413 `payload_too_large`", default_doc="1048576 (1 MiB)"),
    V("CHARTR_MAX_ITEM_BYTES", integer(1024, 1024 * MIB, "bytes"), MIB, "a single timeline item above this gets 413 `payload_too_large`", default_doc="1048576 (1 MiB)"),
    V("CHARTR_TIMELINE_READ_ALL_MAX_ROWS", integer(1, 10_000_000, "rows"), 50_000, "the most rows a timeline read of every row (`limit=0`) answers, and a `last-assistant-message` read walks back over; a window holding more gets 400 `too_many_rows` naming this setting ([timeline.md](timeline.md#reading))"),
    V("CHARTR_TOKEN_CACHE_SECONDS", seconds(0, 3600), 5.0, "seconds each process reuses an active API token it looked up instead of querying it per request (`tokens/cache.py`). The bound on revocation: a token revoked, edited or deleted through *another* process is still accepted here for at most this long (in the same process, at once). Unknown and revoked tokens are never cached; `0` turns the cache off"),
    V("CHARTR_STREAM_TICKET_SECONDS", integer(5, 3600, "seconds"), 60, "how long a stream ticket (`POST /api/v1/agents/{id}/timeline/stream-tickets`) may wait before it opens a stream; it opens one stream, once ([api.md](api.md#stream-tickets-browsers))"),
    V("CHARTR_STALE_AFTER_SECONDS", integer(1, 30 * DAY, "seconds"), 300, "a `running` or `initializing` agent with no append, update or heartbeat for this long is `stale` (API field and `?stale=true`); `mark_stale_agents` sets such agents to `error`"),
    V("CHARTR_RETENTION_ARCHIVED_DAYS", integer(0, 36500, "days"), None, "the default `--older-than` of `manage.py purge_archived`: records archived more than this many days ago are hard-deleted when it runs ([operations.md](operations.md))", default_doc="unset (never)"),
    V("CHARTR_API_THROTTLE_RATE", RATE, "", "per-token rate, e.g. `600/m`, counted across every worker and instance (in Redis when `CHARTR_REDIS_URL` is set, else in the database: `tokens/throttling.py`); opening a stream counts as a request. Over it gets 429 `throttled` with `Retry-After`", default_doc="empty (no limit)"),
    "Live timeline stream ([timeline.md](timeline.md))",
    V("CHARTR_REDIS_URL", REDIS_URL, "", "live updates cross processes through Redis pub/sub. gunicorn looks at it too, to pick the default worker count", "settings, gunicorn", "empty"),
    V("CHARTR_LIVE_TRANSPORT", choice("auto", "local", "postgres", "redis"), "auto", "`auto` is `redis` when `CHARTR_REDIS_URL` is set, else `postgres` (LISTEN/NOTIFY) on PostgreSQL, else `local` (in-process only, so one worker). `redis` needs `CHARTR_REDIS_URL`, `postgres` a PostgreSQL `DATABASE_URL`", "settings, gunicorn"),
    V("CHARTR_LIVE_CHANNEL", CHANNEL, "", "pub/sub channel name; the derived one keeps deployments that share one Redis apart", default_doc="derived from the database"),
    V("CHARTR_LIVE_DB_THREADS", integer(1, 256), 4, "threads (and so database connections) per worker process serving the streams' reads and their authentication; an open stream holds no thread of its own"),
    V("CHARTR_HEAP_TRIM_SECONDS", seconds(0, 3600), 10.0, "seconds after live streams close before the worker hands its free heap pages back to the OS (glibc's `malloc_trim`, at most once per period, off the event loop; nothing on other C libraries). `0` turns it off"),
    V("CHARTR_LIVE_POLL_SECONDS", seconds(0.05, 3600), 1.0, "safety net: how often each process re-reads the position of the agents it streams. Exists for the real-process tests, which slow it down or speed it up; leave it alone"),
    V("CHARTR_SSE_KEEPALIVE_SECONDS", seconds(0.1, 3600), 15.0, "seconds between keep-alive comments on an idle stream; lower it only if a proxy drops idle connections sooner. The real-process tests set 1"),
    V("CHARTR_MAX_STREAMS", integer(1, 1_000_000), 3000, "open live streams per worker process; one more gets 503 `stream_capacity` with `Retry-After` (`timeline/live/slots.py`)"),
    V("CHARTR_MAX_STREAMS_PER_TOKEN", integer(1, 1_000_000), 2500, "open live streams per API token in each worker process; one more gets 429 `too_many_streams` with `Retry-After`"),
    "Data snapshots ([snapshots.md](snapshots.md))",
    V("CHARTR_SNAPSHOTS_KEEP", integer(0, 1000), 14, "how many snapshots `<data dir>/snapshots` keeps; 0 disables them"),
    V("CHARTR_MAINTENANCE_WAIT", integer(0, 3600, "seconds"), 20, "seconds a write waits while a restore holds writes back, before it gets 503 `maintenance` with `Retry-After` ([snapshots.md](snapshots.md))"),
    "Deployment & security ([deploy.md](deploy.md))",
    V("CHARTR_DEBUG", BOOLEAN, False, "Django's `DEBUG`; never on a server others can reach"),
    V("CHARTR_ALLOWED_HOSTS", HOSTS, ["localhost", "127.0.0.1", "[::1]"], "host names chartr answers to; the health probes answer on any", "settings, compose", "`localhost,127.0.0.1,[::1]` (compose: `localhost,127.0.0.1`)"),
    V("CHARTR_CSRF_TRUSTED_ORIGINS", ORIGINS, [], "origins trusted for admin form posts", default_doc="empty"),
    V("CHARTR_CORS_ORIGINS", ORIGINS, [], "web origins (scheme, host, port) whose pages may call the API and open its streams from a browser (CORS, through django-cors-headers); preflights are answered for `/api/` only. Tokens and tickets travel in headers and URLs, never cookies, so no credentials mode ([api.md](api.md#browsers-cors))", default_doc="empty (no cross-origin access)"),
    V("CHARTR_SECURE_COOKIES", BOOLEAN, False, "`SESSION_COOKIE_SECURE` and `CSRF_COOKIE_SECURE`"),
    V("CHARTR_SSL_REDIRECT", BOOLEAN, False, "`SECURE_SSL_REDIRECT` (the health probes are exempt)"),
    V("CHARTR_TRUST_X_FORWARDED_PROTO", BOOLEAN, False, "`SECURE_PROXY_SSL_HEADER = (\"HTTP_X_FORWARDED_PROTO\", \"https\")`; only behind a proxy that overwrites that header"),
    V("CHARTR_HSTS_SECONDS", integer(0, 10 * 365 * DAY, "seconds"), 0, "`SECURE_HSTS_SECONDS`"),
    V("CHARTR_HSTS_INCLUDE_SUBDOMAINS", BOOLEAN, False, "`SECURE_HSTS_INCLUDE_SUBDOMAINS`"),
    V("CHARTR_HSTS_PRELOAD", BOOLEAN, False, "`SECURE_HSTS_PRELOAD`"),
    V("CHARTR_ADMIN_LOGIN_FAILURE_LIMIT", integer(1, 1000), 5, "wrong admin passwords for one user name from one address before that pair is locked out, and from one address whatever the user names before that address is (django-axes; unlocking: [operations.md](operations.md))"),
    V("CHARTR_ADMIN_LOGIN_LOCKOUT_SECONDS", integer(0, 365 * DAY, "seconds"), 3600, "seconds an admin login lockout lasts; 0: until an operator resets it (`manage.py axes_reset`)"),
    "Server ([deploy.md](deploy.md))",
    V("CHARTR_BIND", BINDS, ["127.0.0.1:8000"], "address(es) to listen on. The image's health check probes the first one", "gunicorn, `chartr/healthcheck.py`", "`127.0.0.1:8000` (image: `0.0.0.0:8000`)"),
    V("CHARTR_WORKERS", integer(1, 64), None, "worker processes. More than one needs a transport that crosses processes (`redis` or `postgres`): with the `local` one, start refuses", G, "1 with the `local` live transport; else 2 × CPUs, at most 8"),
    V("CHARTR_THREADS", integer(1, 256), 1, "threads per worker, for thread-based worker classes only", G),
    V("CHARTR_WORKER_CLASS", WORKER_CLASS, "chartr.workers.DrainingUvicornWorker", "`gthread` serves `chartr.wsgi` instead (no live streams)", G, "`chartr.workers.DrainingUvicornWorker` (uvicorn's worker, draining on SIGTERM)"),
    V("CHARTR_TIMEOUT", integer(0, DAY, "seconds"), 30, "seconds a silent worker gets before it is restarted (an async worker heartbeats during long streams); 0: never", G),
    V("CHARTR_GRACEFUL_TIMEOUT", integer(1, 3600, "seconds"), 30, "seconds to finish in-flight requests (and open streams) on shutdown", G),
    V("CHARTR_DRAIN_SECONDS", seconds(0, 3600), 0.0, "on SIGTERM, seconds to keep serving with `/readyz` failing (open streams end, new ones get 503) before accepting stops, so a load balancer takes the instance out first; the grace period is stretched to at least this + 5 s. Behind a balancer set it above the balancer's probe interval (see deploy.md)", "gunicorn, `chartr/workers.py`"),
    V("CHARTR_KEEPALIVE", integer(0, 3600, "seconds"), 5, "seconds an idle HTTP keep-alive connection stays open (gunicorn's `keepalive`, uvicorn's `timeout_keep_alive`)", G),
    V("CHARTR_FORWARDED_ALLOW_IPS", PROXIES, "127.0.0.1,::1", "proxies whose `X-Forwarded-For` is trusted for client addresses", G, "`127.0.0.1,::1`"),
    V("CHARTR_WORKER_TMP_DIR", PATH, None, "where gunicorn keeps its worker heartbeat files", G, "system temp dir"),
    V("CHARTR_ACCESS_LOG", BOOLEAN, True, "off turns the access log off", G),
    V("CHARTR_COLLECTSTATIC", BOOLEAN, True, "collects static files at start when they changed; the image collects at build time", "entrypoint (`manage.py prepare_server`)", "on (image: off)"),
    V("CHARTR_PYTHON", PROGRAM, "python3", "the interpreter the entrypoint runs", "entrypoint", "`python3` (image: `python`; `make serve`: the venv's)"),
    "Logging",
    V("CHARTR_LOG_LEVEL", LOG_LEVEL, "info", "log level of Django's root logger and of gunicorn", "settings, gunicorn"),
    "compose.yaml (on the host, passed into the containers)",
    V("CHARTR_DATABASE_URL", DATABASE_URL, None, "on the host: becomes `DATABASE_URL` in the chartr container; `postgres://chartr:chartr@postgres:5432/chartr` with `--profile postgres`", "compose", "`sqlite:////data/chartr.sqlite3`"),
    V("CHARTR_POSTGRES_PASSWORD", PASSWORD, "chartr", "on the host: password of the `--profile postgres` database", "compose"),
    "The Claude Code hook (`chartr-claude-hook`, where Claude Code runs: [claude-code.md](claude-code.md#hooks))",
    V("CHARTR_URL", Kind("an http(s) URL", r"https?://\S+", samples=("http://127.0.0.1:8000", ("127.0.0.1:8000",))), "", "the chartr the hook sends Claude Code's events to; unset: the hook sends nothing and says so", "`chartr-claude-hook`"),
    V("CHARTR_TOKEN", Kind("an API token", r"\S+", samples=("chartr-token", ("two words",))), "", "the API token the hook sends them with (one that may write)", "`chartr-claude-hook`"),
    V("CHARTR_CLAUDE_NAMESPACE", Kind("1 to 64 of `A-Z a-z 0-9 . _ : -`", r"[A-Za-z0-9._:-]{1,64}", samples=("default", ("a b",))), "default", "the namespace of the sessions the hook marks (`default` is where `import_claude_code` writes)", "`chartr-claude-hook`"),
    V("CHARTR_HOOK_TIMEOUT", seconds(0.1, 30), 2.0, "how long the hook waits for chartr before giving up (Claude Code goes on either way); a wrong value is named on stderr and 2 is used", "`chartr-claude-hook`"),
    "Tests only",
    V("CHARTR_REQUIRE_SERVICES", BOOLEAN, False, "on: tests that need PostgreSQL, Redis or chromium fail instead of skipping (`.ci/run` sets it; so does `CI=true`)", "tests (`tests/conftest.py`)"),
    V("CHARTR_TEST_KEEP_DIRS", BOOLEAN, False, "on: the test run keeps the data and config dirs from the environment instead of throwaway ones", "tests (`tests/support/pytest_env.py`)"),
    V("CHARTR_TEST_POSTGRES_URL", DATABASE_URL, None, "server where the real-process live tests create their scratch databases", "tests (`tests/support/processes.py`)", "`postgresql://postgres@127.0.0.1:5432/postgres`"),
    V("CHARTR_TEST_REDIS_URL", REDIS_URL, "redis://127.0.0.1:6379/9", "Redis for the real-process live tests", "tests (`tests/support/processes.py`)"),
    V("CHARTR_FUZZ_EXAMPLES", integer(1, 100000), 25, "examples per endpoint for the schema fuzz test", "tests (`tests/kernel/api/test_fuzz.py`)"),
    V("CHARTR_SCHEMATHESIS_EXAMPLES", integer(1, 100000), 10, "examples per operation for `st run` against the live server", "tests (`tests/process/test_schemathesis.py`)"),
    V("CHARTR_SCHEMATHESIS_SEED", integer(0, 2**32 - 1), 20261201, "the seed of that run", "tests (`tests/process/test_schemathesis.py`)"),
)  # fmt: skip
BY_NAME: dict[str, Variable] = {variable.name: variable for variable in VARIABLES}
#: ``CHARTR_`` names in the code that are not environment variables: settings constants
#: (tests change them with ``override_settings``) and a name in the architecture test.
NOT_ENVIRONMENT = frozenset(
    {"CHARTR_SSE_BUFFER_SIZE", "CHARTR_SSE_BATCH_SIZE", "CHARTR_SSE_RETRY_MS", "CHARTR_MAY_IMPORT"}
)


def _parse(variable: Variable, environ: Mapping[str, str]) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, problem)`` when the variable refuses what it is set to."""
    raw = environ.get(variable.name, "")
    if raw == "":
        return variable.default, None
    try:
        return variable.kind.parse(raw), None
    except ValueError:
        return None, f"{variable.name}={raw!r}: expected {variable.kind.allowed}."


def value(name: str, environ: Mapping[str, str] = os.environ) -> Any:
    """One variable's value (its default when unset); raises ConfigError when it is wrong."""
    parsed, problem = _parse(BY_NAME[name], environ)
    if problem is not None:
        raise ConfigError([problem])
    return parsed


def _unknown(environ: Mapping[str, str]) -> list[str]:
    problems = []
    for name in sorted(n for n in environ if n.startswith("CHARTR_") and n not in BY_NAME):
        if name in NOT_ENVIRONMENT:
            problems.append(f"{name} is a constant in chartr/settings.py, not an environment variable; unset it.")
        else:
            close = difflib.get_close_matches(name, BY_NAME, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            problems.append(f"{name} is set, but chartr has no such variable.{hint}")
    return problems


def serves_asgi(worker_class: str) -> bool:
    """Whether gunicorn's worker class serves chartr.asgi (and so the live streams)."""
    return "uvicorn" in worker_class.lower() or worker_class == "asgi"


def _combinations(values: dict[str, Any]) -> list[str]:
    """The rules that tie variables together; fills in the default ``CHARTR_WORKERS``."""
    problems = []
    database = values["DATABASE_URL"]
    vendor = "postgresql" if database and "postgresql" in database["ENGINE"] else "sqlite"
    setting, redis_url = values["CHARTR_LIVE_TRANSPORT"], values["CHARTR_REDIS_URL"]
    if setting == "redis" and not redis_url:
        problems.append("CHARTR_LIVE_TRANSPORT='redis' needs CHARTR_REDIS_URL, e.g. redis://127.0.0.1:6379/0.")
    if setting == "postgres" and vendor != "postgresql":
        problems.append(
            "CHARTR_LIVE_TRANSPORT='postgres' needs a PostgreSQL DATABASE_URL; on SQLite use 'redis' or 'auto'."
        )
    transport = effective_transport(setting, redis_url, vendor)
    workers = values["CHARTR_WORKERS"]
    if workers is None:
        values["CHARTR_WORKERS"] = 1 if transport == "local" else min(2 * (os.cpu_count() or 1), MAX_DEFAULT_WORKERS)
    elif workers > 1 and transport == "local" and serves_asgi(values["CHARTR_WORKER_CLASS"]):
        problems.append(
            f"CHARTR_WORKERS={workers} with the local live transport (SQLite without CHARTR_REDIS_URL, or "
            "CHARTR_LIVE_TRANSPORT='local'): provisional updates would reach only the streams of their own worker. "
            "Set CHARTR_LIVE_TRANSPORT=redis with CHARTR_REDIS_URL=redis://HOST:6379/0, or CHARTR_WORKERS=1."
        )
    return problems


def load(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Every declared variable's value by name; raises ConfigError listing every problem."""
    parsed = {variable.name: _parse(variable, environ) for variable in VARIABLES}
    values = {name: result for name, (result, _) in parsed.items()}
    problems = [problem for _, problem in parsed.values() if problem] + _unknown(environ)
    if not problems:
        problems = _combinations(values)
    if problems:
        raise ConfigError(problems)
    return values


# --- docs/configuration.md's table, generated from VARIABLES (a test keeps the file so) ---
DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
BEGIN = "<!-- BEGIN generated by `python -m chartr.config --write` from chartr/config.py; do not edit -->"
END = "<!-- END generated -->"


def _default_text(variable: Variable) -> str:
    default = variable.default
    if variable.default_doc or isinstance(default, bool):
        return variable.default_doc or ("on" if default else "off")
    if isinstance(default, int | float):
        return number_text(default)
    return f"`{','.join(default) if isinstance(default, list) else default}`" if default else "unset"


def table() -> str:
    lines, group = ["| variable | accepts | default | meaning | read by |", "|---|---|---|---|---|"], None
    for variable in VARIABLES:
        if variable.group != group:
            group = variable.group
            lines.append(f"| **{group}** | | | | |")
        cells = (
            f"`{variable.name}`",
            variable.kind.allowed,
            _default_text(variable),
            variable.meaning,
            variable.read_by,
        )
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return f"{BEGIN}\n" + "\n".join(lines) + f"\n{END}"


def documented_table(text: str) -> str:
    """The generated part of ``text`` (docs/configuration.md), markers included."""
    return text[text.index(BEGIN) : text.index(END) + len(END)]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        text = DOC.read_text()
        DOC.write_text(text.replace(documented_table(text), table()))
    else:
        sys.stdout.write(table() + "\n")
