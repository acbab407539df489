"""API tokens, import runs and the dashboard."""

from __future__ import annotations

import re

import pytest
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from legacy.models import ImportRun
from tokens.authentication import BearerTokenAuthentication

pytestmark = pytest.mark.django_db


def authenticate(raw: str):
    request = RequestFactory().get("/api/v1/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    return BearerTokenAuthentication().authenticate(request)


def created_raw_token(response) -> str:
    match = re.search(r'id="raw-token" readonly value="([^"]+)"', response.content.decode())
    assert match, "the raw token is shown on the page"
    return match.group(1)


class TestImportRuns:
    def test_list_and_view_only(self, admin_client):
        now = timezone.now()
        run = ImportRun.objects.create(
            source_path="/data/legacy.json",
            started_at=now,
            finished_at=now,
            counts={"projects": {"created": 2, "skipped": 1}},
            warnings=["odd"],
        )
        changelist = admin_client.get(reverse("admin:legacy_importrun_changelist"))
        text = changelist.content.decode()
        assert "/data/legacy.json" in text and "projects: created 2, skipped 1" in text
        assert admin_client.get(reverse("admin:legacy_importrun_add")).status_code == 403
        assert admin_client.post(reverse("admin:legacy_importrun_change", args=[run.pk]), {}).status_code == 403
        assert (
            admin_client.post(reverse("admin:legacy_importrun_delete", args=[run.pk]), {"post": "yes"}).status_code
            == 403
        )
