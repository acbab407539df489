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

from chartr.api.authentication import BearerTokenAuthentication
from chartr.models import ApiToken, ImportRun
from chartr.services import create_api_token, hash_token
from registry.services import archive_project
from snapshots.services import update_agent
from tests.admin.test_registry_admin import messages_of
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory

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
        response = admin_client.post(reverse("admin:chartr_apitoken_add"), {"name": "daemon", "read_only": "on"})
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"]
        raw = created_raw_token(response)
        token = ApiToken.objects.get()
        assert (token.name, token.read_only, token.created_by) == ("daemon", True, admin_user)
        assert token.token_hash == hash_token(raw) and raw not in str(token.__dict__.values())
        assert LogEntry.objects.get(action_flag=ADDITION, object_id=str(token.pk)).user == admin_user
        # never again: the token's own page does not have it
        page = admin_client.get(reverse("admin:chartr_apitoken_change", args=[token.pk])).content.decode()
        assert raw not in page and token.prefix in page

    def test_blank_name_is_a_form_error(self, admin_client):
        response = admin_client.post(reverse("admin:chartr_apitoken_add"), {"name": ""})
        assert response.status_code == 200 and "name" in response.context["adminform"].form.errors
        assert ApiToken.objects.count() == 0

    def test_list_shows_when_each_token_was_last_used(self, admin_client):
        used, raw = create_api_token(name="used")
        create_api_token(name="unused")
        authenticate(raw)
        response = admin_client.get(reverse("admin:chartr_apitoken_changelist"))
        rows = {t.name: t for t in response.context["cl"].result_list}
        assert rows["used"].last_used_at is not None and rows["unused"].last_used_at is None
        assert "Last used at" in response.content.decode()

    def test_revoke_button_confirms_then_revokes_and_logs(self, admin_client, admin_user):
        token, raw = create_api_token(name="daemon")
        page = admin_client.get(reverse("admin:chartr_apitoken_change", args=[token.pk])).content.decode()
        revoke_url = reverse("admin:chartr_apitoken_revoke", args=[token.pk])
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
        changelist = reverse("admin:chartr_apitoken_changelist")
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
        change = reverse("admin:chartr_apitoken_change", args=[token.pk])
        assert admin_client.post(change, {"name": "renamed"}).status_code == 403
        assert admin_client.post(reverse("admin:chartr_apitoken_delete", args=[token.pk]), {"post": "yes"}).status_code == 403
        token.refresh_from_db()
        assert token.name == "a"

    def test_revoke_needs_change_permission(self, staff_client):
        token, _ = create_api_token(name="a")
        client = staff_client("chartr.view_apitoken")
        assert client.post(reverse("admin:chartr_apitoken_revoke", args=[token.pk]), {"confirm": "yes"}).status_code == 403
        assert client.get(reverse("admin:chartr_apitoken_add")).status_code == 403
        token.refresh_from_db()
        assert token.revoked_at is None


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
        changelist = admin_client.get(reverse("admin:chartr_importrun_changelist"))
        text = changelist.content.decode()
        assert "/data/legacy.json" in text and "projects: created 2, skipped 1" in text
        assert admin_client.get(reverse("admin:chartr_importrun_add")).status_code == 403
        assert admin_client.post(reverse("admin:chartr_importrun_change", args=[run.pk]), {}).status_code == 403
        assert admin_client.post(reverse("admin:chartr_importrun_delete", args=[run.pk]), {"post": "yes"}).status_code == 403


class TestDashboard:
    def test_counts_attention_and_recent_activity(self, admin_client):
        live = ProjectFactory()
        WorkspaceFactory(project=live)
        gone = ProjectFactory()
        WorkspaceFactory(project=gone)
        AgentFactory(workspace=WorkspaceFactory(project=gone), agent_id="gone-agent", lifecycle="running")
        archive_project(project=gone)
        workspace = WorkspaceFactory(project=live)
        now = timezone.now()
        AgentFactory(workspace=workspace, agent_id="older-attention", requires_attention=True, attention_reason="error",
                     attention_at=now - dt.timedelta(hours=2))
        AgentFactory(workspace=workspace, agent_id="newer-attention", requires_attention=True,
                     attention_reason="permission", attention_at=now - dt.timedelta(minutes=5))
        AgentFactory(workspace=workspace, agent_id="busy", lifecycle="running")
        AgentFactory(workspace=workspace, agent_id="idle-one")
        update_agent(agent=AgentFactory.build(agent_id="busy"), last_activity_at=now - dt.timedelta(minutes=1))
        update_agent(agent=AgentFactory.build(agent_id="idle-one"), last_activity_at=now - dt.timedelta(hours=3))

        response = admin_client.get(reverse("admin:index"))
        assert response.status_code == 200
        text = response.content.decode()
        dashboard = response.context["dashboard"]
        assert (dashboard.projects.live, dashboard.projects.archived) == (1, 1)
        assert (dashboard.workspaces.live, dashboard.workspaces.archived) == (2, 2)
        assert dict(dashboard.agents_by_lifecycle) == {
            "initializing": 0, "idle": 3, "running": 1, "error": 0, "closed": 0,
        }
        assert dashboard.archived_agents == 1
        assert [a.agent_id for a in dashboard.needing_attention] == ["newer-attention", "older-attention"]
        assert [a.agent_id for a in dashboard.recently_active] == ["busy", "idle-one"]
        assert 'data-lifecycle="running"><span>running</span> <span>1</span>' in text
        assert text.index("newer-attention") < text.index("older-attention")
        assert reverse("admin:snapshots_agentsnapshot_change", args=["busy"]) in text
        # the app list is still there below the dashboard
        assert reverse("admin:registry_project_changelist") in text

    def test_dashboard_query_count_does_not_grow_with_the_fleet(self, admin_client):
        def index_queries() -> int:
            with CaptureQueriesContext(connection) as ctx:
                assert admin_client.get(reverse("admin:index")).status_code == 200
            return len(ctx.captured_queries)

        workspace = WorkspaceFactory()
        AgentFactory(workspace=workspace, requires_attention=True, attention_reason="error", last_activity_at=timezone.now())
        small = index_queries()
        for _ in range(10):
            AgentFactory(
                workspace=WorkspaceFactory(), requires_attention=True, attention_reason="finished",
                last_activity_at=timezone.now(),
            )
        assert index_queries() == small
