"""chartr/middleware.py's Browser* subclasses: Django's user and messages for every request but a
cookieless API call, in both modes."""

from __future__ import annotations

import asyncio

import pytest
from django.contrib.messages import get_messages
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpResponse
from django.test import RequestFactory

from chartr.middleware import (
    BrowserAuthenticationMiddleware,
    BrowserMessageMiddleware,
    is_cookieless_api_call,
)

pytestmark = pytest.mark.django_db


def chain(*, is_async: bool):
    """Session, user and messages in settings' order around a view recording what it was given."""
    seen = {}

    def view(request):
        seen.update(user=hasattr(request, "user"), messages=hasattr(request, "_messages"))
        return HttpResponse("ok")

    async def async_view(request):
        return view(request)

    handler = async_view if is_async else view
    for middleware in (BrowserMessageMiddleware, BrowserAuthenticationMiddleware, SessionMiddleware):
        handler = middleware(handler)
    return handler, seen


def serve(request, *, is_async: bool) -> dict:
    handler, seen = chain(is_async=is_async)
    response = asyncio.run(handler(request)) if is_async else handler(request)
    assert response.status_code == 200
    return seen


CASES = [
    # (path, cookie, whether the user and messages are there)
    ("/api/v1/agents/a1/timeline", None, False),
    ("/api/v1/agents/a1/timeline", "sessionid=abc", True),
    ("/api/v1/docs", None, True),
    ("/api/v1/schema", None, True),
    ("/admin/", None, True),
    ("/healthz", None, True),
]


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize(("path", "cookie", "browser"), CASES)
def test_only_a_cookieless_api_call_skips_the_browsers_middleware(path, cookie, browser, is_async):
    headers = {"HTTP_COOKIE": cookie} if cookie else {}
    request = RequestFactory().get(path, **headers)
    assert is_cookieless_api_call(request) is not browser
    assert serve(request, is_async=is_async) == {"user": browser, "messages": browser}


def test_a_request_with_a_cookie_still_gets_its_messages_and_session():
    request = RequestFactory().get("/api/v1/agents/a1/timeline", HTTP_COOKIE="sessionid=unknown")
    handler, _ = chain(is_async=False)
    handler(request)
    assert request.session.session_key is None  # an unknown session key is no session
    assert list(get_messages(request)) == []
    assert not request.user.is_authenticated


def test_the_admins_system_checks_are_met_by_the_subclasses(settings):
    # admin.E408-E410 look for subclasses of Django's classes, which these are, in this order
    # (the session's own class stays: the deploy checks of its cookie look for it by name).
    from django.core.checks import run_checks

    assert not [message.id for message in run_checks() if message.id.startswith("admin.E4")]
    wrapped = [
        "django.contrib.sessions.middleware.SessionMiddleware",
        "chartr.middleware.BrowserAuthenticationMiddleware",
        "chartr.middleware.BrowserMessageMiddleware",
    ]
    positions = [settings.MIDDLEWARE.index(name) for name in wrapped]
    assert positions == sorted(positions)
