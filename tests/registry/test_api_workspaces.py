from __future__ import annotations

import pytest

from registry.models import Workspace
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

WORKSPACE_FIELDS = {
    "id",
    "stats",
    "project_id",
    "directory",
    "display_name",
    "kind",
    "branch",
    "worktree_root",
    "extra",
    "created_at",
    "updated_at",
    "archived_at",
    "archive_operation",
}


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_create_returns_201_with_plain_project_id(api):
    project = ProjectFactory()
    response = api.post(
        "/api/v1/workspaces",
        {"project_id": project.pk, "directory": "/w/feature//", "kind": "worktree", "branch": "feat"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == WORKSPACE_FIELDS
    assert body["project_id"] == project.pk
    assert (body["directory"], body["display_name"], body["branch"]) == ("/w/feature", "feature", "feat")
    assert response["Location"] == f"/api/v1/workspaces/{body['id']}"


@pytest.mark.parametrize(
    "body, fields",
    [
        ({"project_id": 999999, "directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"project_id": 2**64, "directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"project_id": -1, "directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"project_id": "one", "directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"project_id": 1.5, "directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"project_id": True, "directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"directory": "/w", "kind": "checkout"}, ["project_id"]),
        ({"project_id": 1, "directory": "/w", "kind": "git"}, ["kind"]),
    ],
)
def test_create_invalid_is_400(api, body, fields):
    ProjectFactory()
    assert_error(api.post("/api/v1/workspaces", body, format="json"), 400, "invalid", fields=fields)
    assert Workspace.objects.count() == 0


def test_create_in_archived_project_is_409_archived(api):
    project = ProjectFactory()
    api.post(f"/api/v1/projects/{project.pk}/archive")
    response = api.post(
        "/api/v1/workspaces", {"project_id": project.pk, "directory": "/w", "kind": "checkout"}, format="json"
    )
    assert_error(response, 409, "archived")


def test_create_duplicate_directory_is_409(api):
    workspace = WorkspaceFactory(directory="/w/one")
    response = api.post(
        "/api/v1/workspaces",
        {"project_id": workspace.project_id, "directory": "/w//one", "kind": "checkout"},
        format="json",
    )
    assert_error(response, 409, "duplicate_directory")


def test_get_patch_and_404(api):
    workspace = WorkspaceFactory()
    assert api.get(f"/api/v1/workspaces/{workspace.pk}").json()["id"] == workspace.pk
    response = api.patch(f"/api/v1/workspaces/{workspace.pk}", {"display_name": "W", "branch": "main"}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["display_name"], response.json()["branch"]) == ("W", "main")
    assert_error(api.patch(f"/api/v1/workspaces/{workspace.pk}", {"kind": "worktree"}, format="json"), 400, "invalid")
    assert_error(api.get(f"/api/v1/workspaces/{workspace.pk + 100}"), 404, "not_found")
    assert_error(api.patch(f"/api/v1/workspaces/{workspace.pk + 100}", {}, format="json"), 404, "not_found")


def test_archive_counts_agents_and_unarchive_restores_them(api):
    workspace = WorkspaceFactory()
    AgentFactory(workspace=workspace)
    AgentFactory(workspace=workspace)
    response = api.post(f"/api/v1/workspaces/{workspace.pk}/archive")
    assert response.status_code == 200
    assert response.json()["archived"] == {"agents": 2}
    assert set(response.json()) == {"workspace", "archived"}
    assert api.post(f"/api/v1/workspaces/{workspace.pk}/archive").json()["archived"] == {"agents": 0}
    assert_error(api.patch(f"/api/v1/workspaces/{workspace.pk}", {"branch": "x"}, format="json"), 409, "archived")

    response = api.post(f"/api/v1/workspaces/{workspace.pk}/unarchive")
    assert response.json()["restored"] == {"agents": 2}
    assert response.json()["workspace"]["archived_at"] is None
    assert api.post(f"/api/v1/workspaces/{workspace.pk}/unarchive").json()["restored"] == {"agents": 0}


def test_unarchive_inside_archived_project_is_409(api):
    workspace = WorkspaceFactory()
    api.post(f"/api/v1/projects/{workspace.project_id}/archive")
    assert_error(api.post(f"/api/v1/workspaces/{workspace.pk}/unarchive"), 409, "archived")


def test_list_filters(api):
    project = ProjectFactory()
    a = WorkspaceFactory(project=project, kind="checkout", directory="/w/a")
    b = WorkspaceFactory(project=project, kind="worktree", directory="/w/b")
    other = WorkspaceFactory(directory="/w/c")
    gone = WorkspaceFactory(project=project, directory="/w/d")
    api.post(f"/api/v1/workspaces/{gone.pk}/archive")

    assert ids(api.get("/api/v1/workspaces")) == [a.pk, b.pk, other.pk]
    assert ids(api.get(f"/api/v1/workspaces?project_id={project.pk}")) == [a.pk, b.pk]
    assert ids(api.get(f"/api/v1/workspaces?project_id={project.pk}&archived=all")) == [a.pk, b.pk, gone.pk]
    assert ids(api.get("/api/v1/workspaces?archived=true")) == [gone.pk]
    assert ids(api.get("/api/v1/workspaces?kind=worktree")) == [b.pk]
    assert ids(api.get("/api/v1/workspaces?project_id=99999999")) == []
    assert_error(api.get("/api/v1/workspaces?project_id=x"), 400, "invalid", fields=["project_id"])
    assert_error(api.get(f"/api/v1/workspaces?project_id={2**63}"), 400, "invalid", fields=["project_id"])
    assert_error(api.get("/api/v1/workspaces?project_id=0"), 400, "invalid", fields=["project_id"])


def test_lookup_by_directory_returns_zero_or_one_and_never_creates(api):
    workspace = WorkspaceFactory(directory="/w/exists")
    assert ids(api.get("/api/v1/workspaces?directory=/w/exists/")) == [workspace.pk]
    assert ids(api.get("/api/v1/workspaces?directory=//w//exists")) == [workspace.pk]
    assert ids(api.get("/api/v1/workspaces?directory=/w/missing")) == []
    assert Workspace.objects.count() == 1
    assert_error(api.get("/api/v1/workspaces?directory=w/exists"), 400, "invalid", fields=["directory"])
