"""chartr settings: the one module, fed by the environment through chartr.config.

Precedence: real environment variables, then ``<config dir>/chartr.env``
(read by django-environ), then the defaults declared in
chartr/config/variables.py. Every variable is parsed there, by its declared
kind: a wrong value, or a ``CHARTR_*`` name chartr does not know, makes this
import raise ``chartr.config.ConfigError`` (an ImproperlyConfigured) naming
it, so no ``manage.py`` command and no server starts. Nothing secret lives in
this file.

One section per concern, each setting defined once, in this order: paths and
secrets; apps, middleware and templates; accounts and locale; database;
static files; limits; API; live timeline stream; data snapshots; deployment
and security; logging. docs/configuration.md's table of the variables is
generated from their declarations; a test keeps it so.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import environ
from corsheaders.defaults import default_headers as default_cors_headers
from whitenoise.compress import Compressor

from chartr import config
from chartr.paths import (
    ENV_FILENAME,
    ensure_private_dir,
    load_or_create_secret_key,
    resolve_config_dir,
    resolve_data_dir,
)

# --- Paths & secrets --------------------------------------------------------
BASE_DIR = Path(__file__).resolve().parent.parent

CONFIG_DIR = ensure_private_dir(resolve_config_dir())
# read_env never overrides variables that are already set, so the real
# environment wins over the file.
if (CONFIG_DIR / ENV_FILENAME).is_file():
    environ.Env.read_env(str(CONFIG_DIR / ENV_FILENAME), overwrite=False)
# Every variable, parsed and checked together; the only read of the environment below.
_env = config.load()

# The data dir may come from chartr.env too, so resolve it after reading it.
DATA_DIR = ensure_private_dir(resolve_data_dir())

SECRET_KEY = _env["CHARTR_SECRET_KEY"] or load_or_create_secret_key(CONFIG_DIR)

# --- Apps, middleware & templates -------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "axes",  # admin login lockout (AXES_* below, docs/operations.md)
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "corsheaders",
    "chartr",
    "tokens",
    "registry",
    "snapshots",
    "timeline",
    "legacy",
    "datadir",
    "retention",
    "dashboard",
    "portability",
    "claude_code",
    "codex",
]

# Every entry is async-capable, so requests that chartr/asgi.py hands to the
# async handler (the live stream) reach their view without a thread hop (see
# chartr/middleware.py). Health probes come first: they answer before host
# validation and the HTTPS redirect (see chartr/health.py).
MIDDLEWARE = [
    "chartr.health.HealthProbeMiddleware",
    "chartr.middleware.UnstorableTextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "chartr.middleware.ContentSecurityPolicyMiddleware",
    "chartr.middleware.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "chartr.middleware.OperatorTimeZoneMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "chartr.middleware.TryAgainLaterMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "chartr.urls"
WSGI_APPLICATION = "chartr.wsgi.application"
ASGI_APPLICATION = "chartr.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # First, before the apps: chartr/templates/admin overrides the admin's own pages.
        "DIRS": [BASE_DIR / "chartr" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Accounts & locale ------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# Seconds and the zone on every admin date-time (chartr/formats/en/formats.py).
FORMAT_MODULE_PATH = ["chartr.formats"]
TIME_ZONE = _env["CHARTR_TIME_ZONE"]
# Admin pages show times in the operator's zone instead (kernel/zones.py, chartr.middleware): the browser's.
USE_I18N = True
USE_TZ = True

# --- Database ---------------------------------------------------------------
SQLITE_PATH = DATA_DIR / "chartr.sqlite3"
DATABASES = {"default": _env["DATABASE_URL"] or environ.Env.db_url_config(f"sqlite:///{SQLITE_PATH}")}
# Django's backends plus database-held ON DELETE CASCADE (see chartr/db_backends).
_CHARTR_BACKENDS = {
    "django.db.backends.sqlite3": "chartr.db_backends.sqlite3",
    "django.db.backends.postgresql": "chartr.db_backends.postgresql",
}
DATABASES["default"]["ENGINE"] = _CHARTR_BACKENDS.get(DATABASES["default"]["ENGINE"], DATABASES["default"]["ENGINE"])
DATABASE_VENDOR = "sqlite" if DATABASES["default"]["ENGINE"].endswith("sqlite3") else "postgresql"
if DATABASE_VENDOR == "sqlite":
    # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue on
    # the busy timeout instead of failing mid-transaction with "database is
    # locked". WAL lets readers proceed while one writer commits; foreign keys
    # are enabled by Django itself on every connection.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": _env["CHARTR_SQLITE_TIMEOUT"],
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not Django's shared-cache in-memory default: concurrency tests
    # need real WAL locking between connections, the way production runs.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test_chartr.sqlite3")}
# Persistent connections: the server runs sync requests on a fixed pool of
# threads (chartr/asgi.py), each keeping its connection between requests.
DATABASES["default"].setdefault("CONN_MAX_AGE", _env["CHARTR_CONN_MAX_AGE"])
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
# Threads (and so database connections) per server process for everything but
# the live stream; the stream's reads have their own, CHARTR_LIVE_DB_THREADS.
CHARTR_SYNC_THREADS = _env["CHARTR_SYNC_THREADS"]
# Concurrent timeline appends of one process commit together, one transaction
# per batch, each append in a savepoint of its own (timeline/writes/group_commit.py).
CHARTR_GROUP_COMMIT = _env["CHARTR_GROUP_COMMIT"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Static files -----------------------------------------------------------
STATIC_URL = "static/"
# chartr's own stylesheets (the admin pages' and the API docs') are the chartr app's, in chartr/static:
# no page has inline styles (see SECURE_CSP).
# Whether `manage.py prepare_server` (bin/chartr-entrypoint) collects them when they changed.
CHARTR_COLLECTSTATIC = _env["CHARTR_COLLECTSTATIC"]
STATIC_ROOT = Path(_env["CHARTR_STATIC_ROOT"] or BASE_DIR / "staticfiles").expanduser()
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed static files once collectstatic has run; plain names
    # before that, so pages render in tests and fresh checkouts with DEBUG off.
    "staticfiles": {"BACKEND": "chartr.staticfiles.ManifestOnceCollectedStorage"},
}
# Source maps are half of the collected bytes and only browser devtools fetch
# them: leaving them uncompressed makes a collect markedly faster.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [*Compressor.SKIP_COMPRESS_EXTENSIONS, "map"]

# --- Limits -----------------------------------------------------------------
# Request bodies above this get 413 payload_too_large.
CHARTR_MAX_BODY_BYTES = _env["CHARTR_MAX_BODY_BYTES"]
# A single timeline item above this gets 413 payload_too_large.
CHARTR_MAX_ITEM_BYTES = _env["CHARTR_MAX_ITEM_BYTES"]
CHARTR_TIMELINE_READ_ALL_MAX_ROWS = _env["CHARTR_TIMELINE_READ_ALL_MAX_ROWS"]
DATA_UPLOAD_MAX_MEMORY_SIZE = max(CHARTR_MAX_BODY_BYTES, 2_621_440)
# Seconds a client has to send a request's body once its headers are in (chartr/serving.py);
# the limits on connections, request lines and headers are the server's (gunicorn.conf.py).
CHARTR_BODY_TIMEOUT = _env["CHARTR_BODY_TIMEOUT"]

# --- API tokens (tokens/cache.py) -------------------------------------------
# Seconds a process keeps an active token it looked up; a token revoked by
# another process is refused here at most this long after; 0 turns it off.
CHARTR_TOKEN_CACHE_SECONDS = _env["CHARTR_TOKEN_CACHE_SECONDS"]

# Seconds a stream ticket may wait before opening its stream (it opens one, once).
CHARTR_STREAM_TICKET_SECONDS = _env["CHARTR_STREAM_TICKET_SECONDS"]

# --- Agents -----------------------------------------------------------------
# A running or initializing agent with no append, update or heartbeat for this
# long is stale: its daemon is presumably gone (docs/snapshots-api in README).
CHARTR_STALE_AFTER_SECONDS = _env["CHARTR_STALE_AFTER_SECONDS"]
# purge_archived's default --older-than, in days; unset: purge only when told how old.
CHARTR_RETENTION_ARCHIVED_DAYS = _env["CHARTR_RETENTION_ARCHIVED_DAYS"]

# --- API --------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tokens.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tokens.permissions.HasApiToken"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Refuses NUL, lone surrogates, NaN and out-of-range numbers before any serializer sees them.
    "DEFAULT_PARSER_CLASSES": ["kernel.api.parsers.StrictJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "kernel.api.pagination.KeysetCursorPagination",
    "DEFAULT_THROTTLE_CLASSES": ["tokens.throttling.TokenRateThrottle"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "kernel.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "kernel.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
}
# Requests per token, e.g. "600/m" or "50/s"; empty (the default) means no limit.
CHARTR_API_THROTTLE_RATE = _env["CHARTR_API_THROTTLE_RATE"]

SPECTACULAR_SETTINGS = {
    "TITLE": "chartr API",
    "DESCRIPTION": "Durable storage for a fleet of AI coding agents.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No badge fetched from validator.swagger.io: the docs page loads nothing from elsewhere (see SECURE_CSP).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # 3.1: JSON Schema proper (`const`, type lists, `contentSchema` for the stream's event data).
    "OAS_VERSION": "3.1.0",
    # The schema and docs accept a token or a staff admin session (a browser
    # cannot send a bearer token to open /docs); the session opens only these.
    "SERVE_AUTHENTICATION": [
        "tokens.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "SERVE_PERMISSIONS": ["tokens.permissions.HasApiTokenOrStaffSession"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # The plain views (kernel/api/plain.py), documented from their msgspec shapes.
        "kernel.api.plain_schema.document_plain_views",
        "kernel.api.schema.forbid_unknown_request_fields",
        "timeline.api.schema.document_item_types",
        "timeline.api.schema.document_timeline_stream",
        # Last: every string of a request, whoever documented it, refuses NUL (kernel/api/schema_text.py).
        "kernel.api.schema_text.state_that_nul_is_refused",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ProjectKindEnum": "registry.models.ProjectKind",
        "WorkspaceKindEnum": "registry.models.WorkspaceKind",
    },
}

# --- Live timeline stream (timeline/live/, docs/timeline.md) ----------------
# Cross-process fan-out through Redis pub/sub when set.
CHARTR_REDIS_URL = _env["CHARTR_REDIS_URL"]
# auto: redis when CHARTR_REDIS_URL is set, else postgres on PostgreSQL, else local.
CHARTR_LIVE_TRANSPORT = _env["CHARTR_LIVE_TRANSPORT"]
# Pub/sub channel; empty = derived from the database, so deployments sharing one Redis stay apart.
CHARTR_LIVE_CHANNEL = _env["CHARTR_LIVE_CHANNEL"]
# Threads (and so database connections) per process serving the streams' reads.
CHARTR_LIVE_DB_THREADS = _env["CHARTR_LIVE_DB_THREADS"]
# Seconds after streams close before the worker hands free heap pages back to the
# OS (glibc's malloc_trim, timeline/live/heap.py); at most one trim per period. 0: never.
CHARTR_HEAP_TRIM_SECONDS = _env["CHARTR_HEAP_TRIM_SECONDS"]
# Safety net: how often each process re-reads head_seq/version of its subscribed
# agents. An environment variable so the real-process tests can slow or speed it.
CHARTR_LIVE_POLL_SECONDS = _env["CHARTR_LIVE_POLL_SECONDS"]
# Seconds between keep-alive comments on an idle stream (the real-process tests set 1).
CHARTR_SSE_KEEPALIVE_SECONDS = _env["CHARTR_SSE_KEEPALIVE_SECONDS"]
# Open streams per worker process (503 stream_capacity over it) and per token in each
# worker (429 too_many_streams): timeline/live/slots.py.
CHARTR_MAX_STREAMS = _env["CHARTR_MAX_STREAMS"]
CHARTR_MAX_STREAMS_PER_TOKEN = _env["CHARTR_MAX_STREAMS_PER_TOKEN"]
# Fixed: no deployment needs to tune these (tests use override_settings).
# Buffered news per subscriber before it falls back to catch-up from the database.
CHARTR_SSE_BUFFER_SIZE = 256
# Rows per database read while catching up.
CHARTR_SSE_BATCH_SIZE = 100
# The reconnect delay sent to EventSource as `retry:`.
CHARTR_SSE_RETRY_MS = 1000

# --- Data snapshots (datadir/, docs/snapshots.md) ---------------------------
# How many data snapshots <data dir>/snapshots keeps; 0 disables them.
CHARTR_SNAPSHOTS_KEEP = _env["CHARTR_SNAPSHOTS_KEEP"]
# Seconds a transaction waits while a restore holds the write fence before it
# fails with 503 `maintenance` (chartr/db_backends/fence.py).
CHARTR_MAINTENANCE_WAIT = _env["CHARTR_MAINTENANCE_WAIT"]

# --- Deployment & security (docs/deploy.md) ---------------------------------
DEBUG = _env["CHARTR_DEBUG"]
ALLOWED_HOSTS = _env["CHARTR_ALLOWED_HOSTS"]
CSRF_TRUSTED_ORIGINS = _env["CHARTR_CSRF_TRUSTED_ORIGINS"]
# Cross-origin browser access to /api/ (django-cors-headers), for the origins named
# only; with none, its middleware is not installed at all. Bearer tokens and stream
# tickets, not cookies: no credentials. docs/api.md, "Browsers (CORS)".
CHARTR_CORS_ORIGINS = _env["CHARTR_CORS_ORIGINS"]
CORS_ALLOWED_ORIGINS = [origin.rstrip("/") for origin in CHARTR_CORS_ORIGINS]
CORS_URLS_REGEX = r"^/api/"
CORS_ALLOW_HEADERS = (*default_cors_headers, "idempotency-key", "if-match", "last-event-id")
CORS_EXPOSE_HEADERS = ["ETag", "Location", "Retry-After"]
CORS_PREFLIGHT_MAX_AGE = 600
if CORS_ALLOWED_ORIGINS:
    # First: a preflight is answered before anything else looks at the request.
    MIDDLEWARE.insert(0, "corsheaders.middleware.CorsMiddleware")
# The defaults serve plain http on 127.0.0.1. Behind a TLS-terminating proxy,
# set the production environment from docs/deploy.md; with it,
# `manage.py check --deploy` reports no issue. Health probes answer before
# host validation and the HTTPS redirect; see chartr/health.py for why.
CHARTR_SECURE_COOKIES = _env["CHARTR_SECURE_COOKIES"]
SESSION_COOKIE_SECURE = CHARTR_SECURE_COOKIES
CSRF_COOKIE_SECURE = CHARTR_SECURE_COOKIES
SECURE_SSL_REDIRECT = _env["CHARTR_SSL_REDIRECT"]
SECURE_HSTS_SECONDS = _env["CHARTR_HSTS_SECONDS"]
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env["CHARTR_HSTS_INCLUDE_SUBDOMAINS"]
SECURE_HSTS_PRELOAD = _env["CHARTR_HSTS_PRELOAD"]
# Admin login lockout (django-axes): each (user name, client address) pair
# gets CHARTR_ADMIN_LOGIN_FAILURE_LIMIT wrong passwords, then 429 until the
# lockout ends or `manage.py axes_reset` (docs/operations.md). The API's
# bearer tokens never go through authenticate(), so axes does not see them.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = _env["CHARTR_ADMIN_LOGIN_FAILURE_LIMIT"]
AXES_COOLOFF_TIME = dt.timedelta(seconds=_env["CHARTR_ADMIN_LOGIN_LOCKOUT_SECONDS"]) or None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no start-up banner on stdout (commands print what they are asked for)
# Only behind a proxy that overwrites X-Forwarded-Proto on every request;
# otherwise a client could claim https.
if _env["CHARTR_TRUST_X_FORWARDED_PROTO"]:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The Content-Security-Policy of every response (chartr.middleware). Every
# page, the admin's and the Swagger UI's, loads its scripts, styles, images
# and fonts from this origin and has no inline script or style (the docs'
# start-up script is a URL of its own, kernel/api/views.py); only Swagger UI's
# stylesheet uses data: images (its icons). Same shape as Django 6.0's
# setting of this name.
SECURE_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}

# --- Logging ----------------------------------------------------------------
# Every handler redacts secrets (tokens, ?token=... and the like) from what it
# writes; gunicorn's and uvicorn's handlers get the same filter through
# gunicorn.conf.py. See chartr/logs.py.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_secrets": {"()": "chartr.logs.RedactSecrets"},
        "without_traceback": {"()": "chartr.logs.WithoutTraceback"},
    },
    "formatters": {
        # Django's own, for runserver's request lines.
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["redact_secrets"]},
        "django.server": {
            "class": "logging.StreamHandler",
            "formatter": "django.server",
            "filters": ["redact_secrets"],
        },
    },
    "loggers": {
        # A request with a Host outside ALLOWED_HOSTS: one line, not a traceback.
        "django.security.DisallowedHost": {"filters": ["without_traceback"]},
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False},
    },
    # CHARTR_LOG_LEVEL is shared with gunicorn.conf.py, which takes any case.
    "root": {"handlers": ["console"], "level": _env["CHARTR_LOG_LEVEL"].upper()},
}
