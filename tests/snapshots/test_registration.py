"""``PUT /api/v1/agents/{agent_id}/registration``: a daemon registers the agents it owns on first use,
placed by chartr's rule for a cwd (``snapshots.services.register_agent``)."""

from __future__ import annotations

import pytest

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db


def register(api, agent_id: str, **body):
    return api.put(f"/api/v1/agents/{agent_id}/registration", body, format="json")


def test_a_new_agent_lands_in_the_deepest_workspace_above_its_cwd(api):
    project = ProjectFactory(directory="/src/app")
    workspace = WorkspaceFactory(project=project, directory="/src/app")

    response = register(api, "agent-1", cwd="/src/app/packages/web", provider="claude", title="Fix it")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["agent_id"], body["workspace_id"], body["project_id"]) == ("agent-1", workspace.pk, project.pk)
    assert (body["cwd"], body["provider"], body["title"]) == ("/src/app/packages/web", "claude", "Fix it")
    assert response["ETag"] == '"1"'


def test_a_cwd_no_workspace_holds_gets_its_own_project_and_workspace(api):
    response = register(api, "agent-2", cwd="/home/me/scratch", provider="codex")

    assert response.status_code == 201, response.content
    workspace = Workspace.objects.get(pk=response.json()["workspace_id"])
    assert (workspace.directory, workspace.kind, workspace.project.kind) == (
        "/home/me/scratch",
        "checkout",
        "directory",
    )


def test_registering_again_changes_nothing_and_answers_200(api):
    first = register(api, "agent-3", cwd="/w/a", provider="claude", title="one")
    again = register(api, "agent-3", cwd="/elsewhere", provider="codex", title="two")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    agent = AgentSnapshot.objects.get(pk="agent-3")
    assert (agent.cwd, agent.provider, agent.title, agent.version) == ("/w/a", "claude", "one", 1)
    assert (Project.objects.count(), Workspace.objects.count()) == (1, 1)


def test_a_bad_cwd_is_refused_for_an_existing_agent_too(api):
    register(api, "agent-4", cwd="/w/a", provider="claude")

    assert_error(register(api, "agent-4", cwd="not/absolute", provider="claude"), 400, "invalid", fields=["cwd"])


def test_an_agent_created_another_way_is_answered_as_it_is(api):
    agent = AgentFactory(agent_id="made-by-hand")

    response = register(api, "made-by-hand", cwd="/x", provider="claude")

    assert response.status_code == 200
    assert response.json()["workspace_id"] == agent.workspace_id


@pytest.mark.parametrize(
    ("agent_id", "body", "fields"),
    [
        ("ok-id", {"provider": "claude"}, ["cwd"]),
        ("ok-id", {"cwd": "relative/dir", "provider": "claude"}, ["cwd"]),
        ("ok-id", {"cwd": "", "provider": "claude"}, ["cwd"]),
        ("ok-id", {"cwd": "/a", "provider": "claude", "surprise": 1}, ["surprise"]),
        ("bad id!", {"cwd": "/a", "provider": "claude"}, ["agent_id"]),
    ],
)
def test_bad_input_is_a_400_and_writes_nothing(api, agent_id, body, fields):
    response = register(api, agent_id, **body)

    assert_error(response, 400, "invalid", fields=fields)
    assert (Project.objects.count(), Workspace.objects.count(), AgentSnapshot.objects.count()) == (0, 0, 0)


def test_a_cwd_in_an_archived_workspace_is_a_409(api):
    from registry.services import archive_workspace

    workspace = WorkspaceFactory(directory="/old")
    archive_workspace(workspace=workspace)

    response = register(api, "late", cwd="/old/sub", provider="claude")

    assert_error(response, 409, "archived")
    assert not AgentSnapshot.objects.filter(pk="late").exists()


def test_options_on_the_registration_describes_it(api):
    response = api.options("/api/v1/agents/nobody/registration")

    assert response.status_code == 200
    assert "PUT" in response["Allow"]
