"""chartr settings: Django's, and every environment variable of chartr/config.py's table.

Precedence: the real environment, then ``<config dir>/chartr.env`` (read by
django-environ), then the defaults in the table. ``config.load()`` parses every
variable by its declared kind and range: a wrong value or an unknown
``CHARTR_*`` name raises ``ConfigError`` naming it, so no command and no server
starts. Every ``CHARTR_*`` variable is a setting of the same name (its meaning:
the table, docs/configuration.md); Django's own settings come from them below.
Importing this module writes nothing: ``manage.py migrate`` (or the server's
start) creates the data and config dirs and the secret key (chartr/paths.py).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import environ
from corsheaders.defaults import default_headers as default_cors_headers
from whitenoise.compress import Compressor

from chartr import config, paths

# --- Paths & secrets --------------------------------------------------------
BASE_DIR = Path(__file__).resolve().parent.parent
CONFIG_DIR = paths.resolve_config_dir()
# read_env never overrides a variable already set: the real environment wins over the file.
if (CONFIG_DIR / paths.ENV_FILENAME).is_file():
    environ.Env.read_env(str(CONFIG_DIR / paths.ENV_FILENAME), overwrite=False)
_env = config.load()  # the only read of the environment
globals().update({name: parsed for name, parsed in _env.items() if name.startswith("CHARTR_")})
DATA_DIR = paths.resolve_data_dir()  # after chartr.env, which may set CHARTR_DATA_DIR
SECRET_KEY = _env["CHARTR_SECRET_KEY"] or paths.read_secret_key(CONFIG_DIR)

# --- Apps, middleware & templates -------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth",
    "axes",  # admin login lockout (AXES_* below, docs/operations.md)
    "django.contrib.contenttypes", "django.contrib.sessions", "django.contrib.messages",
    "whitenoise.runserver_nostatic", "django.contrib.staticfiles",
    "rest_framework", "django_filters", "drf_spectacular", "drf_spectacular_sidecar", "corsheaders",
    "chartr", "tokens", "registry", "snapshots", "timeline", "legacy", "datadir", "retention", "dashboard", "portability",
    "claude_code", "codex",
]  # fmt: skip
# Every entry is async-capable, so requests that chartr/asgi.py hands to the async handler (the live stream)
# reach their view without a thread hop (chartr/middleware.py). Health probes come first: they answer before
# host validation and the HTTPS redirect (chartr/health.py).
MIDDLEWARE = [
    "chartr.health.HealthProbeMiddleware",
    "chartr.middleware.UnstorableTextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "chartr.middleware.ContentSecurityPolicyMiddleware",
    "chartr.middleware.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's user and messages, skipped by a cookieless API call (chartr/middleware.py).
    "chartr.middleware.BrowserAuthenticationMiddleware",
    "chartr.middleware.BrowserMessageMiddleware",
    "chartr.middleware.OperatorTimeZoneMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "chartr.middleware.TryAgainLaterMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "chartr.urls"
WSGI_APPLICATION = "chartr.wsgi.application"
ASGI_APPLICATION = "chartr.asgi.application"

# chartr/templates first, before the apps': chartr/templates/admin overrides the admin's own pages.
_CONTEXT = (
    "django.template.context_processors.request",
    "django.contrib.auth.context_processors.auth",
    "django.contrib.messages.context_processors.messages",
    "dashboard.reminders.initial_password_reminder",
)  # fmt: skip  (the first-run password reminder)
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "chartr" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": list(_CONTEXT)},
    }
]

# --- Accounts & locale ------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in ("UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator", "NumericPasswordValidator")
]  # fmt: skip
LANGUAGE_CODE = "en-us"
# Seconds and the zone on every admin date-time (chartr/formats/en/formats.py).
FORMAT_MODULE_PATH = ["chartr.formats"]
# Admin pages show times in the operator's zone instead (kernel/zones.py, chartr.middleware): the browser's.
TIME_ZONE = _env["CHARTR_TIME_ZONE"]
USE_I18N = USE_TZ = True

# --- Database ---------------------------------------------------------------
SQLITE_PATH = DATA_DIR / "chartr.sqlite3"
DATABASES = {"default": _env["DATABASE_URL"] or environ.Env.db_url_config(f"sqlite:///{SQLITE_PATH}")}
# Django's backends plus database-held ON DELETE CASCADE (see kernel/db_backends).
_ENGINE = DATABASES["default"]["ENGINE"].replace("django.db.backends.", "kernel.db_backends.")
DATABASES["default"]["ENGINE"] = _ENGINE
DATABASE_VENDOR = "sqlite" if _ENGINE.endswith("sqlite3") else "postgresql"
if DATABASE_VENDOR == "sqlite":
    # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue on the busy timeout instead of
    # failing mid-transaction; WAL lets readers proceed while one writer commits. The test database is a
    # file, not shared-cache memory: concurrency tests need real WAL locking between connections.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": _env["CHARTR_SQLITE_TIMEOUT"],
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test_chartr.sqlite3")}
# Persistent connections: the server runs sync requests on a fixed pool of threads (chartr/asgi.py).
DATABASES["default"].setdefault("CONN_MAX_AGE", _env["CHARTR_CONN_MAX_AGE"])
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Static files -----------------------------------------------------------
# chartr's own stylesheets are the chartr app's, in chartr/static: no page has inline styles (see SECURE_CSP).
STATIC_URL = "static/"
STATIC_ROOT = Path(_env["CHARTR_STATIC_ROOT"] or BASE_DIR / "staticfiles").expanduser()
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed static files once collectstatic has run; plain names before (tests, fresh checkouts).
    "staticfiles": {"BACKEND": "chartr.staticfiles.ManifestOnceCollectedStorage"},
}
# Source maps are half of the collected bytes and only devtools fetch them: not compressing them is faster.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [*Compressor.SKIP_COMPRESS_EXTENSIONS, "map"]
DATA_UPLOAD_MAX_MEMORY_SIZE = max(_env["CHARTR_MAX_BODY_BYTES"], 2_621_440)

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
    # The schema and docs accept a token or a staff admin session (a browser cannot send a bearer token to /docs).
    "SERVE_AUTHENTICATION": [
        "tokens.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "SERVE_PERMISSIONS": ["tokens.permissions.HasApiTokenOrStaffSession"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # The plain views (kernel/api/plain.py), documented from their msgspec shapes, and the live
        # stream, from the declaration beside its view (timeline/live/openapi.py).
        "kernel.api.plain_schema.document_plain_views",
        "kernel.api.schema.forbid_unknown_request_fields",
        "timeline.api.schema.document_item_types",
        # Last: every string of a request, whoever documented it, refuses NUL (kernel/api/schema_text.py).
        "kernel.api.schema_text.state_that_nul_is_refused",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ProjectKindEnum": "registry.models.ProjectKind",
        "WorkspaceKindEnum": "registry.models.WorkspaceKind",
    },
}

# --- Live timeline stream: fixed, no deployment tunes them (tests use override_settings) ---
CHARTR_SSE_BUFFER_SIZE = 256  # buffered news per subscriber before it catches up from the database
CHARTR_SSE_BATCH_SIZE = 100  # rows per database read while catching up
CHARTR_SSE_RETRY_MS = 1000  # the reconnect delay sent to EventSource as `retry:`

# --- Deployment & security (docs/deploy.md) ---------------------------------
# The defaults serve plain http on 127.0.0.1; behind a TLS-terminating proxy, set the production environment
# of docs/deploy.md and `manage.py check --deploy` reports no issue. Health probes answer before host
# validation and the HTTPS redirect (chartr/health.py).
DEBUG = _env["CHARTR_DEBUG"]
ALLOWED_HOSTS = _env["CHARTR_ALLOWED_HOSTS"]
CSRF_TRUSTED_ORIGINS = _env["CHARTR_CSRF_TRUSTED_ORIGINS"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _env["CHARTR_SECURE_COOKIES"]
SECURE_SSL_REDIRECT = _env["CHARTR_SSL_REDIRECT"]
SECURE_HSTS_SECONDS = _env["CHARTR_HSTS_SECONDS"]
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env["CHARTR_HSTS_INCLUDE_SUBDOMAINS"]
SECURE_HSTS_PRELOAD = _env["CHARTR_HSTS_PRELOAD"]
# Only behind a proxy that overwrites X-Forwarded-Proto on every request; otherwise a client could claim https.
if _env["CHARTR_TRUST_X_FORWARDED_PROTO"]:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Cross-origin browser access to /api/ (django-cors-headers) for the origins named only; with none, its
# middleware is not installed. Bearer tokens and stream tickets, not cookies: no credentials (docs/api.md).
CORS_ALLOWED_ORIGINS = [origin.rstrip("/") for origin in _env["CHARTR_CORS_ORIGINS"]]
CORS_URLS_REGEX = r"^/api/"
CORS_ALLOW_HEADERS = (*default_cors_headers, "idempotency-key", "if-match", "last-event-id")
CORS_EXPOSE_HEADERS = ["ETag", "Location", "Retry-After"]
CORS_PREFLIGHT_MAX_AGE = 600
if CORS_ALLOWED_ORIGINS:
    MIDDLEWARE.insert(0, "corsheaders.middleware.CorsMiddleware")  # first: a preflight is answered before all else
# Admin login lockout (django-axes) per (user name, client address), and per address whatever the
# user names it tries (a spray), until it ends or `manage.py axes_reset`
# (docs/operations.md). The API's bearer tokens never go through authenticate(), so axes does not see them.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = _env["CHARTR_ADMIN_LOGIN_FAILURE_LIMIT"]
AXES_COOLOFF_TIME = dt.timedelta(seconds=_env["CHARTR_ADMIN_LOGIN_LOCKOUT_SECONDS"]) or None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no start-up banner on stdout (commands print what they are asked for)
# Every response's Content-Security-Policy (chartr.middleware; the shape of Django 6.0's setting): every page
# loads its scripts, styles, images and fonts from this origin, no inline script or style; only Swagger UI's
# stylesheet uses data: images (its icons).
SECURE_CSP = {
    "default-src": ["'self'"], "script-src": ["'self'"], "style-src": ["'self'"], "img-src": ["'self'", "data:"],
    "font-src": ["'self'"], "connect-src": ["'self'"], "object-src": ["'none'"], "base-uri": ["'self'"],
    "form-action": ["'self'"], "frame-ancestors": ["'none'"],
}  # fmt: skip

# --- Logging: every handler redacts secrets (kernel/logs.py); gunicorn's get the same filter ---
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_secrets": {"()": "kernel.logs.RedactSecrets"},
        "without_traceback": {"()": "kernel.logs.WithoutTraceback"},
    },
    # Django's own, for runserver's request lines.
    "formatters": {
        "django.server": {"()": "django.utils.log.ServerFormatter", "format": "[{server_time}] {message}", "style": "{"}
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
    "root": {"handlers": ["console"], "level": _env["CHARTR_LOG_LEVEL"].upper()},
}
