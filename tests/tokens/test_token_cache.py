"""The per-process token cache: fewer queries, revocation honoured within CHARTR_TOKEN_CACHE_SECONDS."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.factories import AgentFactory
from tests.support.api import assert_error, client_with
from tokens.cache import token_cache
from tokens.models import ApiToken
from tokens.services import create_api_token, hash_token, revoke_api_token

pytestmark = pytest.mark.django_db


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.CHARTR_TOKEN_CACHE_SECONDS = 5
    fake = FakeClock()
    monkeypatch.setattr(token_cache, "clock", fake)
    token_cache.forget()
    yield fake
    token_cache.forget()


def token_queries(client, url: str = "/api/v1/projects") -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return sum('"chartr_apitoken"' in q["sql"] for q in queries.captured_queries)


def revoke_elsewhere(token: ApiToken) -> None:
    """As another process would: straight in the database, no signal reaches this process's cache."""
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())


def test_a_token_is_looked_up_once_per_bound(clock):
    _token, raw = create_api_token(name="cached")
    client = client_with(raw)
    assert token_queries(client) >= 1
    assert token_queries(client) == 0
    clock.now += 5.1
    assert token_queries(client) >= 1


def test_a_token_revoked_elsewhere_is_refused_once_the_bound_has_passed(clock):
    token, raw = create_api_token(name="revoked elsewhere")
    client = client_with(raw)
    assert client.get("/api/v1/projects").status_code == 200
    revoke_elsewhere(token)
    clock.now += 4.9
    assert client.get("/api/v1/projects").status_code == 200  # still within the documented bound
    clock.now += 0.2
    assert_error(client.get("/api/v1/projects"), 401, "not_authenticated")
    clock.now += 100
    assert_error(client.get("/api/v1/projects"), 401, "not_authenticated")  # a refusal is not cached away


def test_a_token_revoked_in_this_process_is_refused_at_once(clock):
    token, raw = create_api_token(name="revoked here")
    client = client_with(raw)
    assert client.get("/api/v1/projects").status_code == 200
    revoke_api_token(token=token)
    assert_error(client.get("/api/v1/projects"), 401, "not_authenticated")


def test_a_zero_bound_turns_the_cache_off(clock, settings):
    settings.CHARTR_TOKEN_CACHE_SECONDS = 0
    token, raw = create_api_token(name="uncached")
    client = client_with(raw)
    assert client.get("/api/v1/projects").status_code == 200
    revoke_elsewhere(token)
    assert_error(client.get("/api/v1/projects"), 401, "not_authenticated")


def test_the_read_only_flag_of_a_cached_token_is_respected(clock):
    agent = AgentFactory()
    _token, raw = create_api_token(name="read only", read_only=True)
    client = client_with(raw)
    assert client.get(f"/api/v1/agents/{agent.agent_id}").status_code == 200
    assert hash_token(raw) in token_cache
    response = client.patch(f"/api/v1/agents/{agent.agent_id}", {"display_name": "x"}, format="json")
    assert_error(response, 403, "permission_denied")


def test_making_a_token_read_only_in_this_process_applies_at_once(clock):
    agent = AgentFactory()
    token, raw = create_api_token(name="demoted")
    client = client_with(raw)
    assert client.get(f"/api/v1/agents/{agent.agent_id}").status_code == 200
    token.read_only = True
    token.save(update_fields=["read_only"])
    response = client.patch(f"/api/v1/agents/{agent.agent_id}", {"display_name": "x"}, format="json")
    assert_error(response, 403, "permission_denied")


def test_the_cache_is_keyed_by_the_hash_never_the_raw_token(clock):
    _token, raw = create_api_token(name="keyed")
    client_with(raw).get("/api/v1/projects")
    assert hash_token(raw) in token_cache
    assert raw not in token_cache
    assert all(raw not in key for key in token_cache._entries)


def test_unknown_tokens_are_not_cached(clock):
    assert_error(client_with("chartr_nope").get("/api/v1/projects"), 401, "not_authenticated")
    assert hash_token("chartr_nope") not in token_cache


def test_last_used_at_is_written_at_most_once_a_minute_per_process(clock):
    token, raw = create_api_token(name="busy")
    client = client_with(raw)
    writes = []
    for _ in range(5):
        with CaptureQueriesContext(connection) as queries:
            client.get("/api/v1/projects")
        writes += [q for q in queries.captured_queries if q["sql"].startswith('UPDATE "chartr_apitoken"')]
    assert len(writes) == 1
    token.refresh_from_db()
    assert token.last_used_at is not None
