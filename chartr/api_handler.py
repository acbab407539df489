"""Django's WSGI handler for calls to the API that carry no cookie: the API's own middleware.

Every request used to pass the whole ``MIDDLEWARE`` list, the session, CSRF,
the lazy user and the messages included. A call to the API with a bearer
token and no cookie gives them nothing to do: no session to load or save, no
CSRF cookie to check or set (DRF's views are CSRF-exempt and only session
authentication enforces it), no messages; the health probes and static files
answer other paths. Passing through them was about a sixth of a 1-item
append's CPU in the server (docs/benchmarks.md). Such a call now runs
through ``settings.API_MIDDLEWARE``, the same list without those entries,
in the same order; everything else (host validation, the security and CSP
headers, ``Content-Length``, the early NUL refusals, the 503 for a busy
database) is the same middleware as before.

A request with a cookie, and the two API views that accept an admin session
(the schema and its docs page), keep the full list, so nothing a browser
sends is ever answered differently.
"""

from __future__ import annotations

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.urls import reverse

from chartr.serving import Scope, is_api_path


class ApiWsgiHandler(WSGIHandler):
    """``WSGIHandler`` whose middleware chain is ``settings.API_MIDDLEWARE``."""

    def load_middleware(self, is_async: bool = False) -> None:
        # BaseHandler builds its chain from settings.MIDDLEWARE, read once, here, before the
        # process serves anything; the setting is put back as soon as the chain is built.
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


def session_api_paths() -> frozenset[str]:
    """The API's addresses whose views also accept an admin session."""
    return frozenset({reverse("api-schema"), reverse("api-docs")})


def takes_api_middleware(scope: Scope, session_paths: frozenset[str]) -> bool:
    """Whether this request may skip the browser-only middleware: an API call with no cookie."""
    path = scope["path"]
    if not is_api_path(path) or path.rstrip("/") in session_paths:
        return False
    return not any(name == b"cookie" for name, _ in scope.get("headers", ()))
