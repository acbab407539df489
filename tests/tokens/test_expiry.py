"""A token's expiry: it stops authenticating by itself, in the cache too, and its streams end
(``tokens.selectors.ended_token_ids``); the commands and an instance export carry it."""

from __future__ import annotations

import datetime as dt
import io
import time

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from tokens.cache import token_cache
from tokens.models import ApiToken
from tokens.selectors import api_tokens, ended_token_ids
from tokens.services import create_api_token

pytestmark = pytest.mark.django_db


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_an_expired_token_is_refused_even_after_it_was_cached(settings):
    settings.CHARTR_TOKEN_CACHE_SECONDS = 300
    token, raw = create_api_token(name="short", expires_at=timezone.now() + dt.timedelta(seconds=1))
    assert client_for(raw).get("/api/v1/projects").status_code == 200
    assert token.token_hash in token_cache

    time.sleep(1.2)

    response = client_for(raw).get("/api/v1/projects")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_ended_tokens_are_the_revoked_expired_and_deleted_ones():
    live, _ = create_api_token(name="live", expires_at=timezone.now() + dt.timedelta(days=1))
    forever, _ = create_api_token(name="forever")
    expired, _ = create_api_token(name="expired", expires_at=timezone.now() + dt.timedelta(seconds=5))
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))

    assert ended_token_ids([live.pk, forever.pk, expired.pk, 999_999]) == {expired.pk, 999_999}
    assert {token.name for token in api_tokens(include_revoked=False)} == {"live", "forever"}


def test_a_new_token_cannot_expire_in_the_past():
    with pytest.raises(ValidationError) as refused:
        create_api_token(name="late", expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert "expires_at" in refused.value.message_dict
    assert not ApiToken.objects.exists()


def test_the_command_creates_an_expiring_token_and_lists_it():
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", "ci", "--expires-in-days", "2", stdout=out, stderr=err)

    token = ApiToken.objects.get()
    assert dt.timedelta(days=2) - (token.expires_at - timezone.now()) < dt.timedelta(minutes=1)
    assert "expiring" in err.getvalue()
    listed = io.StringIO()
    call_command("list_api_tokens", stdout=listed)
    assert "EXPIRES" in listed.getvalue() and token.expires_at.strftime("%Y-%m-%d") in listed.getvalue()


@pytest.mark.parametrize("days", ["0", "-1", "soon", "40000"])
def test_the_command_refuses_a_bad_lifetime_and_creates_nothing(days):
    with pytest.raises(CommandError, match="--expires-in-days"):
        call_command("create_api_token", "ci", "--expires-in-days", days)
    assert not ApiToken.objects.exists()
