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

The handler also remembers where an address resolved to: resolving
``/api/v1/agents/{id}/timeline`` through the nested URL patterns built a
``ResolverMatch`` at every level, a seventh of the Django and DRF work around
a 1-item append (docs/benchmarks.md). Resolving is a function of
the URL configuration and the path alone, so the match of a path (never a 404,
which is raised each time) is reused while that configuration is the one in
force, for the ``RESOLVED_PATHS`` most recent paths.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.urls import ResolverMatch, URLResolver, get_resolver, reverse

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

    def resolve_request(self, request) -> ResolverMatch:
        if hasattr(request, "urlconf"):  # set by a middleware for this request: Django's own way
            return super().resolve_request(request)
        # get_resolver() is a new object whenever the URL configuration changes (clear_url_caches).
        match = resolved(get_resolver(), request.path_info)
        request.resolver_match = match
        return match


#: Paths whose matches are kept (agents' timelines: a fleet's busiest addresses).
RESOLVED_PATHS = 1024


@functools.lru_cache(maxsize=RESOLVED_PATHS)
def resolved(resolver: URLResolver, path: str) -> ResolverMatch:
    """``resolver.resolve(path)``; the match is shared by every request for the path, so nothing
    may change it (Django's handler and DRF only read it; the view gets a copy of its kwargs)."""
    return resolver.resolve(path)


def session_api_paths() -> frozenset[str]:
    """The API's addresses whose views also accept an admin session."""
    return frozenset({reverse("api-schema"), reverse("api-docs")})


def takes_api_middleware(scope: Scope, session_paths: frozenset[str]) -> bool:
    """Whether this request may skip the browser-only middleware: an API call with no cookie."""
    path = scope["path"]
    if not is_api_path(path) or path.rstrip("/") in session_paths:
        return False
    return not any(name == b"cookie" for name, _ in scope.get("headers", ()))
