"""The sessions' admin list: read-only, linking each transcript to its agent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from claude_code import services
from claude_code.keys import SessionKey

pytestmark = pytest.mark.django_db


def test_sessions_are_listed_with_links_to_their_agents_and_cannot_be_edited(admin_client):
    key = SessionKey("-srv-app", "s1")
    services.append_entries(key, [{"type": "user", "uuid": "u"}])
    services.append_entries(SessionKey("-srv-app", "s1", "subagents/agent-a"), [{"type": "user", "uuid": "v"}])
    page = admin_client.get(reverse("admin:claude_code_claudecodesession_changelist")).content.decode()
    assert reverse("admin:snapshots_agentsnapshot_change", args=[key.agent_id]) in page
    assert "subagents/agent-a" in page and "main" in page
    assert admin_client.get(reverse("admin:claude_code_claudecodesession_add")).status_code == 403
