"""API tokens, import runs and the dashboard."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework import exceptions

from tokens.authentication import BearerTokenAuthentication
from tokens.models import ApiToken
from legacy.models import ImportRun
from tokens.services import create_api_token, hash_token
from registry.services import archive_project
from snapshots.services import update_agent
from tests.support.admin import messages_of
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory

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
        assert admin_client.post(reverse("admin:legacy_importrun_delete", args=[run.pk]), {"post": "yes"}).status_code == 403
