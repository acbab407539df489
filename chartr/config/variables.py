"""Every ``CHARTR_*`` environment variable (and ``DATABASE_URL``), declared once.

One ``Variable`` per name: its kind (what it accepts), its default, what it
means and who reads it. ``chartr.config.load`` parses them all,
docs/configuration.md's table is generated from this list
(``python -m chartr.config``), and tests/chartr/test_config.py walks it with a
value each variable accepts and values it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chartr.config.kinds import (
    AbsolutePath,
    BindAddress,
    Boolean,
    Choice,
    CommaList,
    DatabaseURL,
    HostName,
    Integer,
    Kind,
    Origin,
    Program,
    ProxyList,
    Rate,
    RedisURL,
    Seconds,
    Text,
    TimeZone,
    WorkerClass,
)

MIB = 1024 * 1024
DAY = 86400


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


def _groups(*groups: tuple[str, list[Variable]]) -> tuple[Variable, ...]:
    """Each variable with the title of its group (a heading row in docs/configuration.md)."""
    return tuple(
        Variable(**{**variable.__dict__, "group": title}) for title, variables in groups for variable in variables
    )


_TEXT_SECRET = Text(
    allowed="at least 16 characters", pattern=r"[^\n]{16,}", valid="a-long-enough-secret", invalid=("short",)
)
_CHANNEL = Text(
    allowed="1 to 63 of `A-Z a-z 0-9 _`",
    pattern=r"[A-Za-z0-9_]{1,63}",
    valid="chartr_live_prod",
    invalid=("my channel", "x" * 64),
)
_HOSTS = CommaList(HostName(), noun="host names", valid="chartr.example.com,.example.org", invalid=("a b", "x,,y"))
_ORIGINS = CommaList(Origin(), noun="origins", valid="https://chartr.example.com", invalid=("chartr.example.com",))
_BINDS = CommaList(
    BindAddress(), noun="addresses", valid="0.0.0.0:9000,unix:/run/chartr.sock", invalid=("8000", "localhost:70000")
)
_LOG_LEVEL = Choice(("debug", "info", "warning", "error", "critical"), any_case=True)

VARIABLES: tuple[Variable, ...] = _groups(
    ("Paths & secrets", [
        Variable("CHARTR_DATA_DIR", AbsolutePath(), None, "the data dir: SQLite database, migration lock, data snapshots, legacy-import backups ([persistence.md](persistence.md))", "settings (`chartr/paths.py`)", "`$XDG_DATA_HOME/chartr`, else `~/.local/share/chartr` (image: `/data`)"),
        Variable("CHARTR_SECRET_KEY", _TEXT_SECRET, "", "Django's `SECRET_KEY`; set it to use your own (then nothing is written)", default_doc="generated on first start into `<config dir>/secret_key` (mode 0600)"),
    ]),
    ("Database", [
        Variable("DATABASE_URL", DatabaseURL(), None, "the database. gunicorn looks at it too, to pick the default worker count", "settings, gunicorn", "`sqlite:///<data dir>/chartr.sqlite3`"),
        Variable("CHARTR_SQLITE_TIMEOUT", Integer(0, 3600, "seconds"), 20, "SQLite only: seconds a writer waits for the write lock before \"database is locked\" (inside one process writers also wait their turn in arrival order, for at most as long: `chartr/db_backends/sqlite3/writer_turns.py`)"),
        Variable("CHARTR_CONN_MAX_AGE", Integer(0, DAY, "seconds"), 60, "seconds a server thread keeps its database connection between requests (0 = a new one per request)"),
        Variable("CHARTR_SYNC_THREADS", Integer(1, 256), 8, "threads (and so database connections) per worker process for everything but the live stream: API, admin, probes (`chartr/asgi.py`)"),
        Variable("CHARTR_GROUP_COMMIT", Boolean(), True, "concurrent timeline appends of one worker process commit together: one transaction per batch, each append in a savepoint of its own, every answer sent after the COMMIT (`timeline/writes/group_commit.py`, [timeline.md](timeline.md#appending)). Off gives every append its own transaction"),
    ]),
    ("Locale & static files", [
        Variable("CHARTR_TIME_ZONE", TimeZone(), "UTC", "Django's `TIME_ZONE`: the zone the API renders times in, and the admin's for an operator whose browser names none (the admin follows each browser's zone, docs/operations.md); the database stores UTC either way"),
        Variable("CHARTR_STATIC_ROOT", AbsolutePath(), None, "where `collectstatic` writes and the server serves static files from", default_doc="`<checkout>/staticfiles` (image: `/app/staticfiles`)"),
    ]),
    ("Limits & API", [
        Variable("CHARTR_MAX_BODY_BYTES", Integer(1024, 1024 * MIB, "bytes"), MIB, "request bodies above this get 413 `payload_too_large`", default_doc="1048576 (1 MiB)"),
        Variable("CHARTR_MAX_ITEM_BYTES", Integer(1024, 1024 * MIB, "bytes"), MIB, "a single timeline item above this gets 413 `payload_too_large`", default_doc="1048576 (1 MiB)"),
        Variable("CHARTR_TIMELINE_READ_ALL_MAX_ROWS", Integer(1, 10_000_000, "rows"), 50_000, "the most rows a timeline read of every row (`limit=0`) answers, and a `last-assistant-message` read walks back over; a window holding more gets 400 `too_many_rows` naming this setting ([timeline.md](timeline.md#reading))"),
        Variable("CHARTR_TOKEN_CACHE_SECONDS", Seconds(0, 3600), 5.0, "seconds each process reuses an active API token it looked up instead of querying it per request (`tokens/cache.py`). The bound on revocation: a token revoked, edited or deleted through *another* process is still accepted here for at most this long (in the same process, at once). Unknown and revoked tokens are never cached; `0` turns the cache off"),
        Variable("CHARTR_STREAM_TICKET_SECONDS", Integer(5, 3600, "seconds"), 60, "how long a stream ticket (`POST /api/v1/agents/{id}/timeline/stream-tickets`) may wait before it opens a stream; it opens one stream, once ([api.md](api.md#stream-tickets-browsers))", default_doc="60"),
        Variable("CHARTR_STALE_AFTER_SECONDS", Integer(1, 30 * DAY, "seconds"), 300, "a `running` or `initializing` agent with no append, update or heartbeat for this long is `stale` (API field and `?stale=true`); `mark_stale_agents` sets such agents to `error`"),
        Variable("CHARTR_RETENTION_ARCHIVED_DAYS", Integer(0, 36500, "days"), None, "the default `--older-than` of `manage.py purge_archived`: records archived more than this many days ago are hard-deleted when it runs ([operations.md](operations.md))", default_doc="unset (never)"),
        Variable("CHARTR_API_THROTTLE_RATE", Rate(), "", "per-token rate, e.g. `600/m`, counted across every worker and instance (in Redis when `CHARTR_REDIS_URL` is set, else in the database: `tokens/throttling.py`); opening a stream counts as a request. Over it gets 429 `throttled` with `Retry-After`", default_doc="empty (no limit)"),
    ]),
    ("Live timeline stream ([timeline.md](timeline.md))", [
        Variable("CHARTR_REDIS_URL", RedisURL(), "", "live updates cross processes through Redis pub/sub. gunicorn looks at it too, to pick the default worker count", "settings, gunicorn", "empty"),
        Variable("CHARTR_LIVE_TRANSPORT", Choice(("auto", "local", "postgres", "redis")), "auto", "`auto` is `redis` when `CHARTR_REDIS_URL` is set, else `postgres` (LISTEN/NOTIFY) on PostgreSQL, else `local` (in-process only, so one worker). `redis` needs `CHARTR_REDIS_URL`, `postgres` a PostgreSQL `DATABASE_URL`", "settings, gunicorn"),
        Variable("CHARTR_LIVE_CHANNEL", _CHANNEL, "", "pub/sub channel name; the derived one keeps deployments that share one Redis apart", default_doc="derived from the database"),
        Variable("CHARTR_LIVE_DB_THREADS", Integer(1, 256), 4, "threads (and so database connections) per worker process serving the streams' reads and their authentication; an open stream holds no thread of its own"),
        Variable("CHARTR_HEAP_TRIM_SECONDS", Seconds(0, 3600), 10.0, "seconds after live streams close before the worker hands its free heap pages back to the OS (glibc's `malloc_trim`, at most once per period, off the event loop; nothing on other C libraries). `0` turns it off"),
        Variable("CHARTR_LIVE_POLL_SECONDS", Seconds(0.05, 3600), 1.0, "safety net: how often each process re-reads the position of the agents it streams. Exists for the real-process tests, which slow it down or speed it up; leave it alone"),
        Variable("CHARTR_SSE_KEEPALIVE_SECONDS", Seconds(0.1, 3600), 15.0, "seconds between keep-alive comments on an idle stream; lower it only if a proxy drops idle connections sooner. The real-process tests set 1"),
    ]),
    ("Data snapshots ([snapshots.md](snapshots.md))", [
        Variable("CHARTR_SNAPSHOTS_KEEP", Integer(0, 1000), 14, "how many snapshots `<data dir>/snapshots` keeps; 0 disables them"),
        Variable("CHARTR_MAINTENANCE_WAIT", Integer(0, 3600, "seconds"), 20, "seconds a write waits while a restore holds writes back, before it gets 503 `maintenance` with `Retry-After` ([snapshots.md](snapshots.md))"),
    ]),
    ("Deployment & security ([deploy.md](deploy.md))", [
        Variable("CHARTR_DEBUG", Boolean(), False, "Django's `DEBUG`; never on a server others can reach"),
        Variable("CHARTR_ALLOWED_HOSTS", _HOSTS, ["localhost", "127.0.0.1", "[::1]"], "host names chartr answers to; the health probes answer on any", "settings, compose", "`localhost,127.0.0.1,[::1]` (compose: `localhost,127.0.0.1`)"),
        Variable("CHARTR_CSRF_TRUSTED_ORIGINS", _ORIGINS, [], "origins trusted for admin form posts", default_doc="empty"),
        Variable("CHARTR_CORS_ORIGINS", _ORIGINS, [], "web origins (scheme, host, port) whose pages may call the API and open its streams from a browser (CORS, through django-cors-headers); preflights are answered for `/api/` only. Tokens and tickets travel in headers and URLs, never cookies, so no credentials mode ([api.md](api.md#browsers-cors))", default_doc="empty (no cross-origin access)"),
        Variable("CHARTR_SECURE_COOKIES", Boolean(), False, "`SESSION_COOKIE_SECURE` and `CSRF_COOKIE_SECURE`"),
        Variable("CHARTR_SSL_REDIRECT", Boolean(), False, "`SECURE_SSL_REDIRECT` (the health probes are exempt)"),
        Variable("CHARTR_TRUST_X_FORWARDED_PROTO", Boolean(), False, "`SECURE_PROXY_SSL_HEADER = (\"HTTP_X_FORWARDED_PROTO\", \"https\")`; only behind a proxy that overwrites that header"),
        Variable("CHARTR_HSTS_SECONDS", Integer(0, 10 * 365 * DAY, "seconds"), 0, "`SECURE_HSTS_SECONDS`"),
        Variable("CHARTR_HSTS_INCLUDE_SUBDOMAINS", Boolean(), False, "`SECURE_HSTS_INCLUDE_SUBDOMAINS`"),
        Variable("CHARTR_HSTS_PRELOAD", Boolean(), False, "`SECURE_HSTS_PRELOAD`"),
        Variable("CHARTR_ADMIN_LOGIN_FAILURE_LIMIT", Integer(1, 1000), 5, "wrong admin passwords for one user name from one address before that pair is locked out (django-axes; unlocking: [operations.md](operations.md))"),
        Variable("CHARTR_ADMIN_LOGIN_LOCKOUT_SECONDS", Integer(0, 365 * DAY, "seconds"), 3600, "seconds an admin login lockout lasts; 0: until an operator resets it (`manage.py axes_reset`)"),
    ]),
    ("Server ([deploy.md](deploy.md))", [
        Variable("CHARTR_BIND", _BINDS, ["127.0.0.1:8000"], "address(es) to listen on. The image's health check probes the first one", "gunicorn, `chartr/healthcheck.py`", "`127.0.0.1:8000` (image: `0.0.0.0:8000`)"),
        Variable("CHARTR_WORKERS", Integer(1, 64), None, "worker processes. More than one needs a transport that crosses processes (`redis` or `postgres`): with the `local` one, start refuses", "gunicorn", "1 with the `local` live transport; else 2 × CPUs, at most 8"),
        Variable("CHARTR_THREADS", Integer(1, 256), 1, "threads per worker, for thread-based worker classes only", "gunicorn"),
        Variable("CHARTR_WORKER_CLASS", WorkerClass(), "chartr.workers.DrainingUvicornWorker", "`gthread` serves `chartr.wsgi` instead (no live streams)", "gunicorn", "`chartr.workers.DrainingUvicornWorker` (uvicorn's worker, draining on SIGTERM)"),
        Variable("CHARTR_TIMEOUT", Integer(0, DAY, "seconds"), 30, "seconds a silent worker gets before it is restarted (an async worker heartbeats during long streams); 0: never", "gunicorn"),
        Variable("CHARTR_GRACEFUL_TIMEOUT", Integer(1, 3600, "seconds"), 30, "seconds to finish in-flight requests (and open streams) on shutdown", "gunicorn"),
        Variable("CHARTR_DRAIN_SECONDS", Seconds(0, 3600), 0.0, "on SIGTERM, seconds to keep serving with `/readyz` failing (open streams end, new ones get 503) before accepting stops, so a load balancer takes the instance out first; the grace period is stretched to at least this + 5 s. Behind a balancer set it above the balancer's probe interval (see deploy.md)", "gunicorn, `chartr/workers.py`"),
        Variable("CHARTR_KEEPALIVE", Integer(0, 3600, "seconds"), 5, "seconds an idle HTTP keep-alive connection stays open (gunicorn's `keepalive`, uvicorn's `timeout_keep_alive`)", "gunicorn"),
        Variable("CHARTR_FORWARDED_ALLOW_IPS", ProxyList(), "127.0.0.1,::1", "proxies whose `X-Forwarded-For` is trusted for client addresses", "gunicorn", "`127.0.0.1,::1`"),
        Variable("CHARTR_WORKER_TMP_DIR", AbsolutePath(), None, "where gunicorn keeps its worker heartbeat files", "gunicorn", "system temp dir"),
        Variable("CHARTR_ACCESS_LOG", Boolean(), True, "off turns the access log off", "gunicorn"),
        Variable("CHARTR_COLLECTSTATIC", Boolean(), True, "collects static files at start when they changed; the image collects at build time", "entrypoint (`manage.py prepare_server`)", "on (image: off)"),
        Variable("CHARTR_PYTHON", Program(), "python3", "the interpreter the entrypoint runs", "entrypoint", "`python3` (image: `python`; `make serve`: the venv's)"),
    ]),
    ("Connection limits, before authentication ([deploy.md](deploy.md#limits))", [
        Variable("CHARTR_MAX_CONNECTIONS", Integer(16, 1_000_000), 4096, "open connections per worker process (gunicorn's `worker_connections`); a connection over it gets 503 `too_many_connections` with `Retry-After`, except for the health probes", "gunicorn, `chartr/connection_limits.py`"),
        Variable("CHARTR_MAX_REQUEST_LINE_BYTES", Integer(256, 1 * MIB, "bytes"), 65536, "the request line (method, target, version; gunicorn's `limit_request_line`); longer gets 414 `uri_too_long`. The default holds the longest query the API's schema allows (a 4,096-character `directory`, percent-encoded); gunicorn's own workers (`gthread`) stop at 8190", "gunicorn, `chartr/connection_limits.py`", "65536 (64 KiB)"),
        Variable("CHARTR_MAX_HEADER_FIELDS", Integer(8, 1000), 100, "header fields per request (gunicorn's `limit_request_fields`); more gets 431 `headers_too_large`", "gunicorn, `chartr/connection_limits.py`"),
        Variable("CHARTR_MAX_HEADER_FIELD_BYTES", Integer(256, 65536, "bytes"), 8190, "one header field, name and value (gunicorn's `limit_request_field_size`); larger gets 431 `headers_too_large`", "gunicorn, `chartr/connection_limits.py`"),
        Variable("CHARTR_MAX_HEADER_BYTES", Integer(1024, 2 * MIB, "bytes"), 131072, "the request line and every header together (uvicorn's `h11_max_incomplete_event_size`); more gets 431 `headers_too_large`", "gunicorn, `chartr/connection_limits.py`", "131072 (128 KiB)"),
        Variable("CHARTR_HEADER_TIMEOUT", Seconds(0.1, 3600), 10.0, "seconds a client has to send a request's line and headers, from the connection's start or the request's first byte; later gets 408 `request_timeout` and the connection closes", "`chartr/connection_limits.py`"),
        Variable("CHARTR_BODY_TIMEOUT", Seconds(0.1, 3600), 30.0, "seconds a client has to send a request's body once its headers are in; later gets 408 `request_timeout` and the connection closes. The body is read (at most `CHARTR_MAX_BODY_BYTES`) before the token is checked", "`chartr/serving.py`"),
        Variable("CHARTR_MAX_STREAMS", Integer(1, 1_000_000), 3000, "open live streams per worker process; one more gets 503 `stream_capacity` with `Retry-After` (`timeline/live/slots.py`)"),
        Variable("CHARTR_MAX_STREAMS_PER_TOKEN", Integer(1, 1_000_000), 2500, "open live streams per API token in each worker process; one more gets 429 `too_many_streams` with `Retry-After`"),
    ]),
    ("Logging", [
        Variable("CHARTR_LOG_LEVEL", _LOG_LEVEL, "info", "log level of Django's root logger and of gunicorn", "settings, gunicorn"),
    ]),
    ("compose.yaml (on the host, passed into the containers)", [
        Variable("CHARTR_DATABASE_URL", DatabaseURL(), None, "on the host: becomes `DATABASE_URL` in the chartr container; `postgres://chartr:chartr@postgres:5432/chartr` with `--profile postgres`", "compose", "`sqlite:////data/chartr.sqlite3`"),
        Variable("CHARTR_POSTGRES_PASSWORD", Text(allowed="a password of 1 to 99 printable characters, no spaces", pattern=r"\S{1,99}", valid="s3cret", invalid=("two words",)), "chartr", "on the host: password of the `--profile postgres` database", "compose"),
    ]),
    ("The Claude Code hook (`chartr-claude-hook`, where Claude Code runs: [claude-code.md](claude-code.md#hooks))", [
        Variable("CHARTR_URL", Text(allowed="an http(s) URL", pattern=r"https?://\S+", valid="http://127.0.0.1:8000", invalid=("127.0.0.1:8000",)), "", "the chartr the hook sends Claude Code's events to; unset: the hook sends nothing and says so", "`chartr-claude-hook`"),
        Variable("CHARTR_TOKEN", Text(allowed="an API token", pattern=r"\S+", valid="chartr-token", invalid=("two words",)), "", "the API token the hook sends them with (one that may write)", "`chartr-claude-hook`"),
        Variable("CHARTR_CLAUDE_NAMESPACE", Text(allowed="1 to 64 of `A-Z a-z 0-9 . _ : -`", pattern=r"[A-Za-z0-9._:-]{1,64}", valid="default", invalid=("a b",)), "default", "the namespace of the sessions the hook marks (`default` is where `import_claude_code` writes)", "`chartr-claude-hook`"),
        Variable("CHARTR_HOOK_TIMEOUT", Seconds(0.1, 30), 2.0, "how long the hook waits for chartr before giving up (Claude Code goes on either way); a wrong value is named on stderr and 2 is used", "`chartr-claude-hook`"),
    ]),
    ("Tests only", [
        Variable("CHARTR_REQUIRE_SERVICES", Boolean(), False, "on: tests that need PostgreSQL, Redis or chromium fail instead of skipping (`.ci/run` sets it; so does `CI=true`)", "tests (`tests/conftest.py`)"),
        Variable("CHARTR_TEST_KEEP_DIRS", Boolean(), False, "on: the test run keeps the data and config dirs from the environment instead of throwaway ones", "tests (`tests/support/pytest_env.py`)"),
        Variable("CHARTR_TEST_POSTGRES_URL", DatabaseURL(), None, "server where the real-process live tests create their scratch databases", "tests (`tests/support/processes.py`)", "`postgresql://postgres@127.0.0.1:5432/postgres`"),
        Variable("CHARTR_TEST_REDIS_URL", RedisURL(), "redis://127.0.0.1:6379/9", "Redis for the real-process live tests", "tests (`tests/support/processes.py`)"),
        Variable("CHARTR_FUZZ_EXAMPLES", Integer(1, 100000), 25, "examples per endpoint for the schema fuzz test", "tests (`tests/kernel/api/test_fuzz.py`)"),
        Variable("CHARTR_SCHEMATHESIS_EXAMPLES", Integer(1, 100000), 10, "examples per operation for `st run` against the live server", "tests (`tests/process/test_schemathesis.py`)"),
        Variable("CHARTR_SCHEMATHESIS_SEED", Integer(0, 2**32 - 1), 20261201, "the seed of that run", "tests (`tests/process/test_schemathesis.py`)"),
    ]),
)  # fmt: skip

BY_NAME: dict[str, Variable] = {variable.name: variable for variable in VARIABLES}

#: ``CHARTR_`` names in the code that are not environment variables: settings constants
#: (tests change them with ``override_settings``) and a name in the architecture test.
NOT_ENVIRONMENT = frozenset(
    {"CHARTR_SSE_BUFFER_SIZE", "CHARTR_SSE_BATCH_SIZE", "CHARTR_SSE_RETRY_MS", "CHARTR_MAY_IMPORT"}
)
