"""The agent page shows the tree an agent sits in: the agent it works under, and those under it."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from snapshots.models import AgentSnapshot
from snapshots.services import create_agent
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree():
    workspace = WorkspaceFactory()
    session = create_agent(workspace=workspace, provider="claude-code", agent_id="session", title="Fix login")
    for name in ("sub-1", "sub-2"):
        create_agent(workspace=workspace, provider="claude-code", agent_id=name, title=f"task {name}", parent=session)
    create_agent(
        workspace=workspace, provider="claude-code", agent_id="sub-1-deep", parent=AgentSnapshot.objects.get(pk="sub-1")
    )
    return session


def _page(client, agent_id: str) -> str:
    response = client.get(reverse("admin:snapshots_agentsnapshot_change", args=[agent_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_session_page_lists_its_subagents_and_a_subagent_links_its_session(admin_client, tree):
    page = _page(admin_client, "session")
    assert "Agents under it" in page and "Works under" in page
    for name in ("sub-1", "sub-2"):
        assert reverse("admin:snapshots_agentsnapshot_change", args=[name]) in page and f"task {name}" in page
    assert "sub-1-deep" not in page  # children only; the deeper one is on sub-1's page
    sub = _page(admin_client, "sub-1")
    assert reverse("admin:snapshots_agentsnapshot_change", args=["session"]) in sub
    assert reverse("admin:snapshots_agentsnapshot_change", args=["sub-1-deep"]) in sub


def test_deleting_a_session_confirms_the_subagents_it_takes_along(admin_client, tree):
    url = reverse("admin:snapshots_agentsnapshot_delete", args=["session"])
    confirm = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", admin_client.get(url).content.decode()))
    assert "Agents: 4" in confirm  # the session, its two subagents and the one under sub-1
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not AgentSnapshot.objects.exists()
