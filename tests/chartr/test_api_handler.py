"""chartr/api_handler.py: an API call without a cookie skips the browser-only middleware, and is
answered exactly as the full middleware list answers it."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse
from django.urls import get_resolver, reverse
from django.urls import path as route
from rest_framework.authentication import SessionAuthentication

from chartr.api_handler import ApiWsgiHandler, resolved, session_api_paths, takes_api_middleware
from tests.chartr.test_asgi import http_scope
from tests.factories import AgentFactory
from tests.support.api import wsgi_answer
from tokens.services import create_api_token

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("wsgi_keeps_test_connection")]


def test_api_calls_without_a_cookie_take_the_api_middleware():
    sessions = session_api_paths()
    assert takes_api_middleware(http_scope("/api/v1/agents/a/timeline"), sessions)
    assert takes_api_middleware(http_scope("/api/v1/nowhere"), sessions)
    # A cookie, the session-authenticated schema and docs, and every page outside /api/ keep the full list.
    assert not takes_api_middleware(http_scope("/api/v1/agents/a/timeline", [(b"cookie", b"sessionid=x")]), sessions)
    assert not takes_api_middleware(http_scope("/api/v1/schema"), sessions)
    assert not takes_api_middleware(http_scope("/api/v1/docs/"), sessions)
    assert not takes_api_middleware(http_scope("/admin/"), sessions)
    assert not takes_api_middleware(http_scope("/healthz"), sessions)


def chain_of(handler) -> list[str]:
    """The dotted paths of a handler's middleware, outermost first."""
    paths, layer = [], handler._middleware_chain.__wrapped__
    while hasattr(layer, "get_response"):
        paths.append(f"{type(layer).__module__}.{type(layer).__qualname__}")
        layer = layer.get_response.__wrapped__
    return paths


def test_the_api_middleware_is_the_full_list_less_the_browser_only_entries_in_the_same_order():
    assert chain_of(ApiWsgiHandler()) == [m for m in settings.MIDDLEWARE if m not in settings.BROWSER_ONLY_MIDDLEWARE]
    assert "django.middleware.common.CommonMiddleware" in settings.API_MIDDLEWARE
    # The full list is put back once the API handler's chain is built.
    assert chain_of(get_wsgi_application()) == settings.MIDDLEWARE
    assert "django.contrib.sessions.middleware.SessionMiddleware" in settings.MIDDLEWARE


@pytest.fixture
def token():
    return create_api_token(name="api-handler")[1]


def requests(token: str) -> list[tuple]:
    bearer = {"Authorization": f"Bearer {token}"}
    retry = json.dumps({"items": [{"item": {"type": "user_message", "text": "hi"}, "item_id": "once"}]}).encode()
    return [
        ("GET", "/api/v1/agents/same/timeline", {"query": "limit=100", "headers": bearer}),
        ("GET", "/api/v1/agents/same/timeline", {"query": "direction=after&seq=0", "headers": bearer}),
        ("POST", "/api/v1/agents/same/timeline", {"body": retry, "headers": bearer}),  # 200: an idempotent retry
        ("POST", "/api/v1/agents/same/timeline", {"body": b'{"items": [], "items": []}', "headers": bearer}),
        ("POST", "/api/v1/agents/same/timeline", {"body": b'{"items": [{"item": {}}], "x": 1}', "headers": bearer}),
        ("POST", "/api/v1/agents/missing/timeline", {"body": retry, "headers": bearer}),
        ("GET", "/api/v1/agents/same/timeline", {"query": "limit=0", "headers": bearer}),
        ("GET", "/api/v1/agents/same/timeline", {"query": "epoch=%00", "headers": bearer}),
        ("GET", "/api/v1/agents/same/timeline", {"headers": {**bearer, "Accept": "text/html"}}),
        ("DELETE", "/api/v1/agents/same/timeline", {"headers": bearer}),
        ("GET", "/api/v1/agents/same/timeline", {}),
        ("GET", "/api/v1/agents/same/timeline", {"headers": {"Authorization": "Bearer nope"}}),
        ("GET", "/api/v1/agents/same/timeline", {"headers": {**bearer, "Host": "evil.example"}}),
        ("GET", "/api/v1/agents/same/timeline", {"headers": {**bearer, "X-Forwarded-Proto": "https"}}),
        ("GET", "/api/v1/agents", {"headers": bearer}),
        ("GET", "/api/v1/nowhere", {"headers": bearer}),
    ]


def test_every_answer_is_the_full_middlewares_answer(token):
    AgentFactory(agent_id="same")
    full, api = get_wsgi_application(), ApiWsgiHandler()
    first = requests(token)[2]
    assert wsgi_answer(full, first[0], first[1], **first[2])[0].startswith("201")  # stores it; later posts retry
    for method, path, options in requests(token):
        expected = wsgi_answer(full, method, path, **options)
        assert wsgi_answer(api, method, path, **options) == expected, (method, path, options)


def api_views_accepting_a_session() -> set[str]:
    """The names of the API's routes whose view authenticates by session too."""
    found = set()

    def walk(patterns):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns)
                continue
            view_class = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
            classes = getattr(view_class, "authentication_classes", ())
            if any(issubclass(c, SessionAuthentication) for c in classes):
                found.add(pattern.name)

    api = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/v1/")
    walk(api.url_patterns)
    return found


def test_every_api_view_accepting_a_session_keeps_the_full_middleware():
    # A new session-authenticated API view must be added to session_api_paths, or it
    # would run without the session middleware for callers that send no cookie.
    names = api_views_accepting_a_session()
    assert names == {"api-schema", "api-docs"}
    assert {reverse(name) for name in names} == session_api_paths()


# A URL configuration of this module's own, for the test below: the timeline's address goes elsewhere.
urlpatterns = [
    route("api/v1/agents/<str:agent_id>/timeline", lambda request, agent_id: HttpResponse(f"not {agent_id}"))
]


def test_a_path_is_resolved_once_while_the_url_configuration_stands(token, settings):
    AgentFactory(agent_id="same")
    api, bearer = ApiWsgiHandler(), {"Authorization": f"Bearer {token}"}
    resolved.cache_clear()
    first = wsgi_answer(api, "GET", "/api/v1/agents/same/timeline", headers=bearer)
    assert first[0].startswith("200")
    assert wsgi_answer(api, "GET", "/api/v1/agents/same/timeline", headers=bearer) == first
    assert resolved.cache_info().hits == 1
    # A 404 is resolved (and refused) every time, never remembered.
    for _ in range(2):
        assert wsgi_answer(api, "GET", "/api/v1/nowhere", headers=bearer)[0].startswith("404")
    assert resolved.cache_info().currsize == 1
    # Another URL configuration (settings.ROOT_URLCONF clears Django's URL caches) is another resolver.
    settings.ROOT_URLCONF = __name__
    assert wsgi_answer(api, "GET", "/api/v1/agents/same/timeline", headers=bearer)[2] == b"not same"
