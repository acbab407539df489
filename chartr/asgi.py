"""The ASGI application gunicorn's uvicorn worker serves.

Each request goes to one of two applications, chosen by the view its path
resolves to in the URL configuration (``django.urls.resolve``, on the path the
server decoded: a ``%2F`` is a ``/`` by then, so no path parameter holds one):

- a coroutine view (the live timeline stream, and the same stream for the
  admin's timeline page) runs on ``chartr.serving.StreamApplication``, a plain
  ASGI application on Django's request and middleware without a per-request
  thread, so thousands of open streams cost no thread each: their database
  reads (the token check too) go to the live pool (``CHARTR_LIVE_DB_THREADS``)
  and the rest is asyncio;
- every other request (the REST API, the admin, health probes, static files,
  a 404) runs on Django's WSGI handler in a fixed pool of
  ``CHARTR_SYNC_THREADS`` threads through a2wsgi's ``WSGIMiddleware``, which
  hands a view the body only as it reads it. Each thread keeps its database
  connection between requests (``CHARTR_CONN_MAX_AGE``); Django's ASGI
  handler would run every sync request on a brand-new thread with a fresh
  connection.

Both run the whole of ``settings.MIDDLEWARE``, so CORS (when
``CHARTR_CORS_ORIGINS`` installs it) answers the stream's preflight and
headers as it does the API's (tests/process/test_cross_origin.py).
"""

from __future__ import annotations

import functools
import os

from a2wsgi import WSGIMiddleware
from asgiref.sync import iscoroutinefunction
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chartr.settings")

wsgi_application = get_wsgi_application()  # also runs django.setup()

from django.conf import settings  # noqa: E402  (after setup)
from django.urls import Resolver404, resolve  # noqa: E402

from chartr.serving import Front, Scope, StreamApplication  # noqa: E402
from kernel.logs import access_log  # noqa: E402
from timeline.live.hub import get_hub  # noqa: E402
from timeline.live.slots import release_request_slot  # noqa: E402


def _stream_done(request) -> None:
    release_request_slot(request)
    get_hub().heap.streams_closed()


native_application = StreamApplication(when_done=_stream_done)
pooled_application = WSGIMiddleware(wsgi_application, workers=settings.CHARTR_SYNC_THREADS)


def has_coroutine_view(scope: Scope) -> bool:
    """Whether the request's path resolves to a coroutine view (one the stream application serves)."""
    path = scope["path"]
    root_path = scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :]
    return resolves_to_coroutine(settings.ROOT_URLCONF, path)


#: Paths whose answer is kept (agents' timelines: a fleet's busiest addresses).
ROUTED_PATHS = 4096


@functools.lru_cache(maxsize=ROUTED_PATHS)
def resolves_to_coroutine(urlconf: str, path: str) -> bool:
    """Resolving is a function of the URL configuration and the path alone; the answer (a bool, nothing
    a request could change) is kept per path. Resolving ``/api/v1/agents/{id}/timeline`` builds a
    ``ResolverMatch`` at each level of the nested patterns, and Django's handler resolves it again."""
    try:
        return iscoroutinefunction(resolve(path, urlconf).func)
    except Resolver404:
        return False


async def route(scope, receive, send):
    if scope["type"] == "http" and not has_coroutine_view(scope):
        await pooled_application(scope, receive, send)
    else:
        await native_application(scope, receive, send)


# chartr's own refusals (no Host, a body without a length), the JSON 500 for any failure before
# a response started, Connection: close once draining, and the access log's line.
application = Front(route, access_log=access_log)
