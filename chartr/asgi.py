"""The ASGI application gunicorn's uvicorn worker serves.

Two handlers share the process:

- the live timeline stream (a long-lived async view), and the same stream for
  the admin's timeline page, run on Django's ASGI handler without a
  per-request thread-sensitive context (``chartr.serving.SharedThreadAsgiHandler``),
  so thousands of open streams cost no thread each: their database reads go
  to the live pool (``CHARTR_LIVE_DB_THREADS``) and the rest is asyncio;
- every other request (the REST API, the admin, health probes, static files)
  runs on Django's WSGI handler in a small fixed pool of threads; a call to
  the API without a cookie on one whose middleware leaves out what only a
  browser needs (``chartr.api_handler``).

Django's ASGI handler runs each *sync* request on a brand-new thread, hopping
between it and the event loop several times and opening a fresh database
connection every time, since connections are per thread. Through the pool the
same requests hop once and keep their connections (``CHARTR_CONN_MAX_AGE``),
which halves the latency of an API call (docs/benchmarks.md).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chartr.settings")

wsgi_application = get_wsgi_application()  # also runs django.setup()

from django.conf import settings  # noqa: E402  (after setup)

from chartr.api_handler import ApiWsgiHandler, session_api_paths, takes_api_middleware  # noqa: E402
from chartr.logs import access_log  # noqa: E402
from chartr.pooled_wsgi import BufferedWsgiInstance  # noqa: E402
from chartr.serving import RequestGuard, SharedThreadAsgiHandler, is_api_path  # noqa: E402
from timeline.live.hub import get_hub  # noqa: E402


def _stream_done() -> None:
    get_hub().heap.streams_closed()


native_application = SharedThreadAsgiHandler(when_done=_stream_done)

#: Paths served by Django's async handler; everything else goes to the pool.
ASYNC_PATHS = re.compile(
    r"^/api/v1/agents/[^/]+/timeline/stream/?$|^/admin/snapshots/agentsnapshot/[^/]+/timeline/stream/$"
)

_sync_pool = ThreadPoolExecutor(max_workers=settings.CHARTR_SYNC_THREADS, thread_name_prefix="chartr-sync")


api_application = ApiWsgiHandler()
_session_api_paths = session_api_paths()


def closing(application):
    """A Django WSGI app, closing its response however the iteration ends.

    Closing the response sends ``request_finished``, which is where Django
    recycles database connections; asgiref's adapter never calls ``close()``.
    """

    def app_with_close(environ, start_response):
        response = application(environ, start_response)
        try:
            yield from response
        finally:
            response.close()

    return app_with_close


_wsgi_with_close = closing(wsgi_application)
_api_with_close = closing(api_application)


class _PooledWsgiInstance(BufferedWsgiInstance):
    """asgiref's WSGI adapter (request body spooled to disk past 64 KiB), run on the pool,
    answering with one hop back to the event loop (chartr/pooled_wsgi.py)."""

    executor = _sync_pool


async def route(scope, receive, send):
    if scope["type"] == "http" and not ASYNC_PATHS.match(scope["path"]):
        app = _api_with_close if takes_api_middleware(scope, _session_api_paths) else _wsgi_with_close
        await _PooledWsgiInstance(app)(scope, receive, send)
    else:
        await native_application(scope, receive, send)


def body_limit_for(path: str) -> int:
    """The API's documented limit under /api/; Django's own form limit for the admin."""
    return settings.CHARTR_MAX_BODY_BYTES if is_api_path(path) else settings.DATA_UPLOAD_MAX_MEMORY_SIZE


# A fresh context per request, the body limit before anything reads the body, the
# JSON 500 for any failure before a response started, Connection: close once
# draining, and the access log's line (written here when the worker hands it over).
application = RequestGuard(
    route,
    fresh_context=True,
    limit_for=body_limit_for,
    json_errors=True,
    close_when_draining=True,
    access_log=access_log,
)
