"""API tokens in the admin: created once, shown once, revoked."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.test import RequestFactory
from django.urls import reverse
from rest_framework import exceptions

from tests.support.admin import messages_of
from tokens.authentication import BearerTokenAuthentication
from tokens.models import ApiToken
from tokens.services import create_api_token, hash_token

pytestmark = pytest.mark.django_db


def authenticate(raw: str):
    request = RequestFactory().get("/api/v1/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    return BearerTokenAuthentication().authenticate(request)


def created_raw_token(response) -> str:
    match = re.search(r'id="raw-token" readonly value="([^"]+)"', response.content.decode())
    assert match, "the raw token is shown on the page"
    return match.group(1)


class TestApiTokens:
    def test_create_shows_the_raw_token_once_and_stores_only_its_hash(self, admin_client, admin_user):
        response = admin_client.post(reverse("admin:tokens_apitoken_add"), {"name": "daemon", "read_only": "on"})
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"]
        raw = created_raw_token(response)
        token = ApiToken.objects.get()
        assert (token.name, token.read_only, token.created_by) == ("daemon", True, admin_user)
        assert token.token_hash == hash_token(raw) and raw not in str(token.__dict__.values())
        assert LogEntry.objects.get(action_flag=ADDITION, object_id=str(token.pk)).user == admin_user
        # never again: the token's own page does not have it
        page = admin_client.get(reverse("admin:tokens_apitoken_change", args=[token.pk])).content.decode()
        assert raw not in page and token.prefix in page

    def test_blank_name_is_a_form_error(self, admin_client):
        response = admin_client.post(reverse("admin:tokens_apitoken_add"), {"name": ""})
        assert response.status_code == 200 and "name" in response.context["adminform"].form.errors
        assert ApiToken.objects.count() == 0

    def test_list_shows_when_each_token_was_last_used(self, admin_client):
        used, raw = create_api_token(name="used")
        create_api_token(name="unused")
        authenticate(raw)
        response = admin_client.get(reverse("admin:tokens_apitoken_changelist"))
        rows = {t.name: t for t in response.context["cl"].result_list}
        assert rows["used"].last_used_at is not None and rows["unused"].last_used_at is None
        assert "Last used at" in response.content.decode()

    def test_revoke_button_confirms_then_revokes_and_logs(self, admin_client, admin_user):
        token, raw = create_api_token(name="daemon")
        page = admin_client.get(reverse("admin:tokens_apitoken_change", args=[token.pk])).content.decode()
        revoke_url = reverse("admin:tokens_apitoken_revoke", args=[token.pk])
        assert revoke_url in page
        confirm = admin_client.get(revoke_url)
        assert "get 401 from then on" in confirm.content.decode()
        token.refresh_from_db()
        assert token.revoked_at is None

        response = admin_client.post(revoke_url, {"confirm": "yes"})
        assert messages_of(response) == ["Revoked 1 API token."]
        token.refresh_from_db()
        assert token.revoked_at is not None
        with pytest.raises(exceptions.AuthenticationFailed):
            authenticate(raw)
        assert LogEntry.objects.get(action_flag=CHANGE, object_id=str(token.pk)).user == admin_user

    def test_revoke_action_is_idempotent(self, admin_client):
        first, _ = create_api_token(name="a")
        second, _ = create_api_token(name="b")
        changelist = reverse("admin:tokens_apitoken_changelist")
        admin_client.post(
            changelist, {"action": "revoke_selected", "_selected_action": [first.pk], "confirm": "yes"}, follow=True
        )
        response = admin_client.post(
            changelist, {"action": "revoke_selected", "_selected_action": [first.pk, second.pk], "confirm": "yes"}
        )
        assert messages_of(response) == ["Revoked 1 API token.", "1 token was already revoked."]
        assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 0
        assert LogEntry.objects.filter(action_flag=CHANGE).count() == 2

    def test_tokens_cannot_be_edited_or_deleted(self, admin_client):
        token, _ = create_api_token(name="a")
        change = reverse("admin:tokens_apitoken_change", args=[token.pk])
        assert admin_client.post(change, {"name": "renamed"}).status_code == 403
        assert (
            admin_client.post(reverse("admin:tokens_apitoken_delete", args=[token.pk]), {"post": "yes"}).status_code
            == 403
        )
        token.refresh_from_db()
        assert token.name == "a"

    def test_revoke_needs_change_permission(self, staff_client):
        token, _ = create_api_token(name="a")
        client = staff_client("tokens.view_apitoken")
        assert (
            client.post(reverse("admin:tokens_apitoken_revoke", args=[token.pk]), {"confirm": "yes"}).status_code == 403
        )
        assert client.get(reverse("admin:tokens_apitoken_add")).status_code == 403
        token.refresh_from_db()
        assert token.revoked_at is None
