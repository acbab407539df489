from __future__ import annotations

import datetime as dt

import pytest

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

PROJECT_FIELDS = {
    "id",
    "stats",
    "directory",
    "display_name",
    "kind",
    "git_remote",
    "created_at",
    "updated_at",
    "archived_at",
    "archive_operation",
}


def parse_ts(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value)
    assert parsed.utcoffset() is not None and value.endswith("+00:00"), value
    return parsed


def test_create_returns_201_with_every_field(api):
    response = api.post(
        "/api/v1/projects",
        {"directory": "/srv//code/chartr/", "kind": "git", "git_remote": "git@example.com:c.git"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == PROJECT_FIELDS
    assert isinstance(body["id"], int)
    assert body["directory"] == "/srv/code/chartr"
    assert body["display_name"] == "chartr"
    assert body["git_remote"] == "git@example.com:c.git"
    assert body["archived_at"] is None and body["archive_operation"] is None
    parse_ts(body["created_at"])
    parse_ts(body["updated_at"])
    assert response["Location"] == f"/api/v1/projects/{body['id']}"
    assert Project.objects.get(pk=body["id"]).directory == "/srv/code/chartr"


def test_create_duplicate_directory_is_409(api):
    ProjectFactory(directory="/srv/a")
    response = api.post("/api/v1/projects", {"directory": "/srv/a/", "kind": "git"}, format="json")
    assert_error(response, 409, "duplicate_directory")
    assert Project.objects.count() == 1


@pytest.mark.parametrize(
    "body, fields",
    [
        ({"kind": "git"}, ["directory"]),
        ({"directory": "relative/path", "kind": "git"}, ["directory"]),
        ({"directory": "/a/../b", "kind": "git"}, ["directory"]),
        ({"directory": " /a", "kind": "git"}, ["directory"]),
        ({"directory": "/a", "kind": "svn"}, ["kind"]),
        ({"directory": 5, "kind": "git"}, ["directory"]),
        ({"directory": ["/a"], "kind": "git"}, ["directory"]),
        ({"directory": "/a", "kind": "git", "display_name": "x" * 256}, ["display_name"]),
        ({"directory": "/a/" + "x" * 256, "kind": "git"}, ["directory"]),
        ({"directory": "/a", "kind": "git", "archived_at": None}, ["archived_at"]),
        ({"directory": "/a", "kind": "git", "id": 7}, ["id"]),
    ],
)
def test_create_invalid_input_is_400_naming_the_field(api, body, fields):
    response = api.post("/api/v1/projects", body, format="json")
    assert_error(response, 400, "invalid", fields=fields)
    assert Project.objects.count() == 0


def test_body_must_be_an_object(api):
    assert_error(api.post("/api/v1/projects", [1, 2], format="json"), 400, "invalid", fields=["non_field_errors"])


def test_get_and_404(api):
    project = ProjectFactory()
    response = api.get(f"/api/v1/projects/{project.pk}")
    assert response.status_code == 200
    assert response.json()["directory"] == project.directory
    assert_error(api.get(f"/api/v1/projects/{project.pk + 1}"), 404, "not_found")
    assert_error(api.get("/api/v1/projects/99999999999999999999999999"), 404, "not_found")
    assert_error(api.get("/api/v1/projects/abc"), 404, "not_found")


def test_patch_display_name_and_git_remote(api):
    project = ProjectFactory(directory="/srv/p")
    response = api.patch(
        f"/api/v1/projects/{project.pk}", {"display_name": "P", "git_remote": "https://x/p.git"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["display_name"] == "P"
    project.refresh_from_db()
    assert (project.display_name, project.git_remote) == ("P", "https://x/p.git")
    response = api.patch(f"/api/v1/projects/{project.pk}", {"git_remote": None}, format="json")
    assert response.json()["git_remote"] == ""


def test_patch_refuses_fields_it_cannot_change(api):
    project = ProjectFactory(directory="/srv/p")
    response = api.patch(f"/api/v1/projects/{project.pk}", {"directory": "/srv/q"}, format="json")
    assert_error(response, 400, "invalid", fields=["directory"])
    project.refresh_from_db()
    assert project.directory == "/srv/p"
    assert_error(api.patch(f"/api/v1/projects/{project.pk}", {"display_name": ""}, format="json"), 400, "invalid")


def test_patch_archived_project_is_409(api):
    project = ProjectFactory()
    api.post(f"/api/v1/projects/{project.pk}/archive")
    response = api.patch(f"/api/v1/projects/{project.pk}", {"display_name": "new"}, format="json")
    assert_error(response, 409, "archived")


def test_archive_and_unarchive_report_counts_and_are_idempotent(api):
    project = ProjectFactory()
    first, second = WorkspaceFactory(project=project), WorkspaceFactory(project=project)
    AgentFactory(workspace=first)
    AgentFactory(workspace=first)
    AgentFactory(workspace=second)

    response = api.post(f"/api/v1/projects/{project.pk}/archive")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["archived"] == {"workspaces": 2, "agents": 3}
    assert set(body) == {"project", "archived"}
    assert body["project"]["archived_at"] is not None
    parse_ts(body["project"]["archived_at"])
    assert AgentSnapshot.objects.live().count() == 0

    again = api.post(f"/api/v1/projects/{project.pk}/archive")
    assert again.status_code == 200
    assert again.json()["archived"] == {"workspaces": 0, "agents": 0}
    assert again.json()["project"]["archived_at"] == body["project"]["archived_at"]

    response = api.post(f"/api/v1/projects/{project.pk}/unarchive")
    assert response.status_code == 200
    assert response.json()["restored"] == {"workspaces": 2, "agents": 3}
    assert response.json()["project"]["archived_at"] is None
    assert Workspace.objects.live().count() == 2

    again = api.post(f"/api/v1/projects/{project.pk}/unarchive")
    assert again.json()["restored"] == {"workspaces": 0, "agents": 0}
    assert_error(api.post("/api/v1/projects/424242/archive"), 404, "not_found")
    assert_error(api.post("/api/v1/projects/424242/unarchive"), 404, "not_found")


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_list_filters(api):
    git = ProjectFactory(directory="/srv/alpha", kind="git", display_name="Alpha")
    plain = ProjectFactory(directory="/srv/beta", kind="directory", display_name="Second")
    archived = ProjectFactory(directory="/srv/gamma", kind="git")
    api.post(f"/api/v1/projects/{archived.pk}/archive")

    assert ids(api.get("/api/v1/projects")) == [git.pk, plain.pk]
    assert ids(api.get("/api/v1/projects?archived=false")) == [git.pk, plain.pk]
    assert ids(api.get("/api/v1/projects?archived=true")) == [archived.pk]
    assert ids(api.get("/api/v1/projects?archived=all")) == [git.pk, plain.pk, archived.pk]
    assert ids(api.get("/api/v1/projects?kind=directory")) == [plain.pk]
    assert ids(api.get("/api/v1/projects?kind=git&archived=all")) == [git.pk, archived.pk]
    assert ids(api.get("/api/v1/projects?search=alp")) == [git.pk]
    assert ids(api.get("/api/v1/projects?search=SECOND")) == [plain.pk]
    assert ids(api.get("/api/v1/projects?search=srv")) == [git.pk, plain.pk]
    assert ids(api.get("/api/v1/projects?search=%25")) == []
    assert_error(api.get("/api/v1/projects?archived=maybe"), 400, "invalid", fields=["archived"])
    assert_error(api.get("/api/v1/projects?kind=svn"), 400, "invalid", fields=["kind"])


def test_directory_lookup_normalizes_returns_at_most_one_and_never_creates(api):
    project = ProjectFactory(directory="/srv/alpha/beta")
    ProjectFactory(directory="/srv/alpha")
    assert ids(api.get("/api/v1/projects?directory=/srv//alpha/beta/")) == [project.pk]
    assert ids(api.get("/api/v1/projects?directory=/srv/nowhere")) == []
    assert Project.objects.count() == 2
    error = assert_error(api.get("/api/v1/projects?directory=srv/alpha"), 400, "invalid", fields=["directory"])
    assert "absolute" in error["fields"]["directory"][0]
    assert_error(api.get("/api/v1/projects?directory=/a/%00"), 400, "invalid", fields=["directory"])
