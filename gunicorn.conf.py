"""gunicorn settings for chartr; every knob comes from the environment.

The worker is uvicorn's ASGI worker serving ``chartr.asgi:application``: live
timeline streams (server-sent events) need ASGI, since under WSGI Django
buffers a streaming response whole. An async worker also keeps one
long-lived stream from tying up a worker, and its heartbeat means
``CHARTR_TIMEOUT`` bounds a stuck worker, not a long stream.

Each setting comes from a CHARTR_* variable; docs/configuration.md lists
them with every other variable (docs/deploy.md explains the server ones). As
in the Django settings, ``<config dir>/chartr.env`` is read too and the real
environment wins over it.

One worker is the SQLite default because, without PostgreSQL or Redis, live
updates fan out through an in-memory broker that only its own process sees.
"""

from __future__ import annotations

import math
import os

import environ

from chartr.logs import GunicornLogger
from chartr.paths import ENV_FILENAME, resolve_config_dir

_env_file = resolve_config_dir() / ENV_FILENAME
if _env_file.is_file():
    environ.Env.read_env(str(_env_file), overwrite=False)


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _default_workers() -> int:
    database_url = os.environ.get("DATABASE_URL", "")
    shared_fanout = database_url.startswith(("postgres", "pgsql", "psql")) or os.environ.get("CHARTR_REDIS_URL")
    if not shared_fanout:
        return 1
    return min(2 * (os.cpu_count() or 1), 8)


worker_class = _env("CHARTR_WORKER_CLASS", "chartr.workers.DrainingUvicornWorker")
_asgi = "uvicorn" in worker_class.lower() or worker_class == "asgi"
wsgi_app = "chartr.asgi:application" if _asgi else "chartr.wsgi:application"

bind = [address.strip() for address in _env("CHARTR_BIND", "127.0.0.1:8000").split(",") if address.strip()]
workers = int(_env("CHARTR_WORKERS", str(_default_workers())))
threads = int(_env("CHARTR_THREADS", "1"))
timeout = int(_env("CHARTR_TIMEOUT", "30"))
# On SIGTERM the worker drains for CHARTR_DRAIN_SECONDS (chartr/workers.py) before it stops
# accepting; that comes out of the grace period, so the grace period keeps 5 s beyond it.
_drain_seconds = float(_env("CHARTR_DRAIN_SECONDS", "0"))
graceful_timeout = max(int(_env("CHARTR_GRACEFUL_TIMEOUT", "30")), math.ceil(_drain_seconds) + 5)
keepalive = int(_env("CHARTR_KEEPALIVE", "5"))
loglevel = _env("CHARTR_LOG_LEVEL", "info").lower()
errorlog = "-"
# Redacts tokens and secret query parameters from every line, the access log's included (chartr/logs.py).
logger_class = GunicornLogger
accesslog = "-" if _flag("CHARTR_ACCESS_LOG", True) else None
forwarded_allow_ips = _env("CHARTR_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
worker_tmp_dir = os.environ.get("CHARTR_WORKER_TMP_DIR") or None
# gunicorn >= 25.1 opens a control socket under $HOME by default; chartr
# writes nowhere but its data, config and temp dirs.
control_socket_disable = True
proc_name = "chartr"
