"""Middleware that works in both modes.

chartr/asgi.py sends only the live stream through Django's ASGI handler (the
rest runs on its WSGI handler). For those requests a sync-only middleware
would make Django hop to a worker thread and back before the async view even
starts; with every middleware async-capable the stream's view is reached on
the event loop. Under WSGI the classes behave exactly like their parents
(or, without one, like plain middleware).
"""

from __future__ import annotations

import functools
import re

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.urls import reverse
from django.utils import timezone
from django.utils.deprecation import MiddlewareMixin
from whitenoise.middleware import WhiteNoiseMiddleware

from kernel.api.errors import refuse_early, try_again_later
from kernel.zones import operator_zone


class BothModesMiddleware:
    """A middleware that runs in the caller's mode: ``_call`` under WSGI, ``_acall`` on the event loop."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self._acall(request)
        return self._call(request)

    def _call(self, request):
        raise NotImplementedError

    async def _acall(self, request):
        raise NotImplementedError


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, able to run in async mode too; files are served exactly as WhiteNoise serves them."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response=None):
        super().__init__(get_response)
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def _static_file(self, request):
        if self.autorefresh:
            return self.find_file(request.path_info)
        return self.files.get(request.path_info)

    def __call__(self, request):
        if self.async_mode:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request):
        static_file = self._static_file(request)
        if static_file is not None:
            # Opening the file and stat-ing it block, so they run off the loop.
            return await sync_to_async(self.serve)(static_file, request)
        return await self.get_response(request)


class ContentSecurityPolicyMiddleware(BothModesMiddleware):
    """Send ``settings.SECURE_CSP`` as the ``Content-Security-Policy`` of every response.

    Django 5.2 has no CSP support; the setting has the shape of Django 6.0's
    ``SECURE_CSP`` (directive -> sources), so the upgrade can swap this class
    for ``django.middleware.csp.ContentSecurityPolicyMiddleware``. Every
    response gets it, JSON included (it is harmless there), so no HTML page,
    error pages included, can be missed by a content-type check. A response
    that sets its own policy keeps it.
    """

    def __init__(self, get_response):
        super().__init__(get_response)
        self.policy = content_security_policy(settings.SECURE_CSP)

    def _call(self, request):
        return self.with_policy(self.get_response(request))

    async def _acall(self, request):
        return self.with_policy(await self.get_response(request))

    def with_policy(self, response):
        if self.policy and "Content-Security-Policy" not in response.headers:
            response.headers["Content-Security-Policy"] = self.policy
        return response


def content_security_policy(directives: dict[str, list[str] | tuple[str, ...]]) -> str:
    """``{"default-src": ["'self'"], "upgrade-insecure-requests": []}`` as a header value."""
    return "; ".join(" ".join([name, *sources]) for name, sources in directives.items())


#: No address chartr serves has a control character in its path: agent ids,
#: numeric ids and the admin's own segments are all printable.
PATH_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def unstorable_text_refusal(request):
    """The answer for a request carrying text no database can compare, or None.

    PostgreSQL refuses U+0000 in any text parameter, so a NUL that reached a
    lookup (``/agents/a%00b``, ``?search=%00``, the admin's change pages and
    search box) was a 500 there and a plain miss on SQLite. Refused here, at
    the edge, both answer alike: a path with a control character names
    nothing (404), a query parameter with a NUL is invalid (400, naming it).
    JSON bodies get the same rule from the parser (kernel/api/parsers.py).
    """
    if PATH_CONTROL_CHARACTERS.search(request.path_info):
        return refuse_early(request, 404, "not_found", "Nothing exists at this address.")
    if not request.META.get("QUERY_STRING"):
        return None  # no query (an append, usually): nothing to check, and no QueryDict to build
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "\\x00")
            return refuse_early(
                request,
                400,
                "invalid",
                f"Invalid input. {shown}: NUL characters are not allowed.",
                fields={shown: ["NUL characters are not allowed."]},
            )
    return None


class UnstorableTextMiddleware(BothModesMiddleware):
    """``unstorable_text_refusal`` before anything else looks at the request; works in both modes."""

    def _call(self, request):
        return unstorable_text_refusal(request) or self.get_response(request)

    async def _acall(self, request):
        return unstorable_text_refusal(request) or await self.get_response(request)


class TryAgainLaterMiddleware(MiddlewareMixin):
    """A write refused for now (database busy, a restore under way) is a 503 with ``Retry-After`` on
    every page, not Django's 500: the API's exception handler does the same inside DRF. Only an
    exception hook, so Django's own mixin runs it in both modes without a thread hop."""

    def process_exception(self, request, exception):
        return try_again_later(request, exception)


class OperatorTimeZoneMiddleware(BothModesMiddleware):
    """Admin pages render every time in the operator's zone (kernel.zones.operator_zone), as
    ``request.operator_zone``; other requests, the API's, keep ``TIME_ZONE``."""

    #: Where the admin is mounted (chartr/urls.py).
    prefix = "/admin/"

    def _call(self, request):
        if not request.path_info.startswith(self.prefix):
            return self.get_response(request)
        request.operator_zone = operator_zone(request)
        with timezone.override(request.operator_zone):
            return self.get_response(request)

    async def _acall(self, request):
        if not request.path_info.startswith(self.prefix):
            return await self.get_response(request)
        request.operator_zone = operator_zone(request)
        with timezone.override(request.operator_zone):
            return await self.get_response(request)


# --- what only a browser's request needs ---------------------------------------


@functools.cache
def session_api_paths() -> frozenset[str]:
    """The API's addresses whose views also accept an admin session (the OpenAPI document and its page)."""
    return frozenset({reverse("api-schema"), reverse("api-docs")})


def is_cookieless_api_call(request) -> bool:
    """An API call without a cookie, to a view that reads no session: the lazy user and the messages
    have nothing to load, check or save for it."""
    path = request.path_info
    return (
        path.startswith("/api/") and not request.META.get("HTTP_COOKIE") and path.rstrip("/") not in session_api_paths()
    )


class BrowserOnlyMixin:
    """Django's own middleware (the class after this one), for every request but a cookieless API
    call, which goes straight on (``is_cookieless_api_call``). ``__call__`` is the middleware's
    documented entry point; in async mode both branches hand back the awaitable the caller awaits.
    Passing a bearer-token call through the lazy user and the messages cost a 1-item append several
    percent of its server CPU (docs/benchmarks.md); a request with a cookie, and the schema and docs
    pages, meet them as before. Being subclasses, they still satisfy the admin's checks. Django's
    ``SessionMiddleware`` stays as it is: the deploy checks of the session cookie look for it by name."""

    def __call__(self, request):
        if is_cookieless_api_call(request):
            return self.get_response(request)
        return super().__call__(request)


class BrowserAuthenticationMiddleware(BrowserOnlyMixin, AuthenticationMiddleware):
    pass


class BrowserMessageMiddleware(BrowserOnlyMixin, MessageMiddleware):
    pass
