"""Legacy import runs in the admin: read-only records."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from legacy.models import ImportRun

pytestmark = pytest.mark.django_db


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
