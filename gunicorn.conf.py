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

Every variable is parsed by chartr.config's table, as for the Django settings:
a wrong value ends the start with a message naming it and exit status 2. A
server start creates the data and config dirs and the secret key when they are
missing (chartr.paths.prepare_state), as ``manage.py migrate`` does. One
worker is the default with the local live transport (SQLite without Redis),
whose updates only their own process sees; more is refused.
"""

from __future__ import annotations

import math
import sys

import environ

from chartr.config import ConfigError, load, serves_asgi
from chartr.paths import ENV_FILENAME, prepare_state, resolve_config_dir
from kernel.logs import GunicornLogger

_env_file = resolve_config_dir() / ENV_FILENAME
if _env_file.is_file():
    environ.Env.read_env(str(_env_file), overwrite=False)

try:
    # Every variable, the Django settings' too: a wrong one stops the master before any worker starts.
    _env = load()
except ConfigError as error:
    # gunicorn would print a traceback for any other exception; a SystemExit ends it with this message only.
    sys.stderr.write(f"{error}\n")
    raise SystemExit(2) from None
prepare_state()

worker_class = _env["CHARTR_WORKER_CLASS"]
wsgi_app = "chartr.asgi:application" if serves_asgi(worker_class) else "chartr.wsgi:application"

bind = _env["CHARTR_BIND"]
# 1 with the local live transport (only its own process hears it; more is refused), else 2 per CPU, at most 8.
workers = _env["CHARTR_WORKERS"]
threads = _env["CHARTR_THREADS"]
timeout = _env["CHARTR_TIMEOUT"]
# On SIGTERM the worker drains for CHARTR_DRAIN_SECONDS (chartr/workers.py) before it stops
# accepting; that comes out of the grace period, so the grace period keeps 5 s beyond it.
graceful_timeout = max(_env["CHARTR_GRACEFUL_TIMEOUT"], math.ceil(_env["CHARTR_DRAIN_SECONDS"]) + 5)
keepalive = _env["CHARTR_KEEPALIVE"]
# Open connections per worker (uvicorn's limit_concurrency, chartr/workers.py; past it a 503):
# every stream the worker may hold (CHARTR_MAX_STREAMS) and room for the API's requests and idle
# keep-alive connections beside them. What a client may send (heads, bodies, their time) is the
# proxy's to bound: deploy/nginx/chartr.conf, docs/deploy.md#limits.
worker_connections = _env["CHARTR_MAX_STREAMS"] + 1024
loglevel = _env["CHARTR_LOG_LEVEL"]
errorlog = "-"
# Redacts tokens and secret query parameters from every line, the access log's included (kernel/logs.py).
logger_class = GunicornLogger
accesslog = "-" if _env["CHARTR_ACCESS_LOG"] else None
forwarded_allow_ips = _env["CHARTR_FORWARDED_ALLOW_IPS"]
worker_tmp_dir = _env["CHARTR_WORKER_TMP_DIR"]
# gunicorn >= 25.1 opens a control socket under $HOME by default; chartr
# writes nowhere but its data, config and temp dirs.
control_socket_disable = True
proc_name = "chartr"
