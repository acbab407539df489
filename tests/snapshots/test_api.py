from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, transaction

from snapshots.models import AgentSnapshot
from snapshots.services import CWD_OUTSIDE_WORKSPACE
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

AGENT_FIELDS = {
    "agent_id",
    "workspace_id",
    "project_id",
    "cwd",
    "provider",
    "title",
    "labels",
    "lifecycle",
    "last_mode_id",
    "config",
    "runtime_info",
    "persistence",
    "requires_attention",
    "attention_reason",
    "attention_at",
    "internal",
    "extra",
    "created_at",
    "updated_at",
    "last_activity_at",
    "last_user_message_at",
    "last_seen_at",
    "stale",
    "archived_at",
    "archive_operation",
    "version",
    "head_seq",
    "min_seq",
    "timeline_epoch",
    "timeline_rows",
    "timeline_bytes",
}


def agent_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["agent_id"] for row in response.json()["results"]]


def test_create_returns_every_field_and_an_etag(api):
    workspace = WorkspaceFactory()
    response = api.post(
        "/api/v1/agents",
        {
            "workspace_id": workspace.pk,
            "agent_id": "agent-1",
            "provider": "claude",
            "title": "Fix the build",
            "labels": {"team": "infra"},
            "lifecycle": "running",
            "config": {"model": "x", "nested": {"list": [1, 2.5, None, True]}},
            "runtime_info": {"pid": 123},
            "persistence": {"session": "abc"},
            "internal": True,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == AGENT_FIELDS
    assert body["agent_id"] == "agent-1"
    assert (body["workspace_id"], body["project_id"]) == (workspace.pk, workspace.project_id)
    assert body["config"] == {"model": "x", "nested": {"list": [1, 2.5, None, True]}}
    assert (body["lifecycle"], body["internal"], body["version"], body["head_seq"]) == ("running", True, 1, 0)
    assert response["ETag"] == '"1"'
    assert response["Location"] == "/api/v1/agents/agent-1"
    assert dt.datetime.fromisoformat(body["created_at"]).utcoffset() == dt.timedelta(0)


def test_create_generates_an_id_when_omitted(api):
    workspace = WorkspaceFactory()
    response = api.post("/api/v1/agents", {"workspace_id": workspace.pk, "provider": "codex"}, format="json")
    assert response.status_code == 201
    assert AgentSnapshot.objects.filter(pk=response.json()["agent_id"]).exists()


@pytest.mark.parametrize(
    "changes, fields",
    [
        ({"agent_id": "has space"}, ["agent_id"]),
        ({"agent_id": "trailing-newline\n"}, ["agent_id"]),
        ({"agent_id": "x" * 129}, ["agent_id"]),
        ({"provider": ""}, ["provider"]),
        ({"labels": {"a": 1}}, ["labels.a"]),
        ({"labels": ["a"]}, ["labels"]),
        ({"config": [1]}, ["config"]),
        ({"config": "text"}, ["config"]),
        ({"lifecycle": "sleeping"}, ["lifecycle"]),
        ({"internal": "perhaps"}, ["internal"]),
        ({"workspace_id": 10**30}, ["workspace_id"]),
        ({"workspace_id": 999999}, ["workspace_id"]),
        ({"version": 5}, ["version"]),
    ],
)
def test_create_invalid_is_400(api, changes, fields):
    workspace = WorkspaceFactory()
    body = {"workspace_id": workspace.pk, "provider": "claude", **changes}
    assert_error(api.post("/api/v1/agents", body, format="json"), 400, "invalid", fields=fields)
    assert AgentSnapshot.objects.count() == 0


def test_create_duplicate_id_is_409_conflict_and_archived_workspace_is_409_archived(api):
    agent = AgentFactory()
    body = {"workspace_id": agent.workspace_id, "agent_id": agent.agent_id, "provider": "claude"}
    assert_error(api.post("/api/v1/agents", body, format="json"), 409, "conflict")
    api.post(f"/api/v1/workspaces/{agent.workspace_id}/archive")
    body["agent_id"] = "another"
    assert_error(api.post("/api/v1/agents", body, format="json"), 409, "archived")


def test_get_returns_etag_and_404(api):
    agent = AgentFactory(agent_id="a.b:c_d-1")
    response = api.get("/api/v1/agents/a.b:c_d-1")
    assert response.status_code == 200
    assert response["ETag"] == '"1"'
    assert response.json()["project_id"] == agent.workspace.project_id
    assert_error(api.get("/api/v1/agents/missing"), 404, "not_found")
    assert_error(api.get("/api/v1/agents/bad%00id"), 404, "not_found")
    assert_error(api.get("/api/v1/agents/" + "x" * 200), 404, "not_found")
    assert_error(api.get("/api/v1/agents/%F0%9F%92%A9"), 404, "not_found")


def test_patch_bumps_version_and_honours_if_match(api):
    AgentFactory(agent_id="a1")
    response = api.patch("/api/v1/agents/a1", {"title": "one"}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 200, response.content
    assert response["ETag"] == '"2"' and response.json()["version"] == 2

    stale = api.patch("/api/v1/agents/a1", {"title": "two"}, format="json", HTTP_IF_MATCH='"1"')
    error = assert_error(stale, 412, "version_mismatch")
    assert error["version"] == 2
    assert AgentSnapshot.objects.get(pk="a1").title == "one"

    # If-Match compares strongly (RFC 9110): a weak tag never matches, even one naming the version.
    weak = api.patch("/api/v1/agents/a1", {"title": "three"}, format="json", HTTP_IF_MATCH='W/"2"')
    assert assert_error(weak, 412, "version_mismatch")["version"] == 2
    assert api.patch("/api/v1/agents/a1", {"title": "three"}, format="json", HTTP_IF_MATCH='"2"')["ETag"] == '"3"'
    assert api.patch("/api/v1/agents/a1", {"title": "any"}, format="json", HTTP_IF_MATCH="*").status_code == 200
    assert api.patch("/api/v1/agents/a1", {"title": "none"}, format="json").status_code == 200
    huge = api.patch("/api/v1/agents/a1", {"title": "x"}, format="json", HTTP_IF_MATCH='"99999999999999999999"')
    assert_error(huge, 412, "version_mismatch")
    for malformed in ("5", '"five"', '"1", "2"', "", '"' + "9" * 30 + '"'):
        response = api.patch("/api/v1/agents/a1", {"title": "x"}, format="json", HTTP_IF_MATCH=malformed)
        assert_error(response, 400, "invalid", fields=["If-Match"])
    assert AgentSnapshot.objects.get(pk="a1").title == "none"


def test_if_match_compares_tags_as_strings(api):
    AgentFactory(agent_id="a1")
    api.patch("/api/v1/agents/a1", {"title": "x"}, format="json")
    assert AgentSnapshot.objects.get(pk="a1").version == 2
    for padded in ('"02"', '"002"', 'W/"02"'):
        response = api.patch("/api/v1/agents/a1", {"title": "padded"}, format="json", HTTP_IF_MATCH=padded)
        assert assert_error(response, 412, "version_mismatch")["version"] == 2
    assert AgentSnapshot.objects.get(pk="a1").title == "x"
    assert api.patch("/api/v1/agents/a1", {"title": "y"}, format="json", HTTP_IF_MATCH='"2"').status_code == 200


def test_if_match_on_an_operation_without_an_etag_is_412(api):
    agent = AgentFactory(agent_id="a1")
    for method, url, body in [
        ("post", "/api/v1/agents/a1/archive", None),
        ("post", "/api/v1/agents/a1/heartbeat", None),
        ("post", "/api/v1/agents", {"agent_id": "a2", "workspace_id": agent.workspace_id}),
        ("patch", f"/api/v1/workspaces/{agent.workspace_id}", {"display_name": "w"}),
        ("patch", f"/api/v1/projects/{agent.workspace.project_id}", {"display_name": "p"}),
        ("post", f"/api/v1/projects/{agent.workspace.project_id}/archive", None),
        ("get", "/api/v1/projects", None),
    ]:
        for tag in ('"1"', "*"):
            response = getattr(api, method)(url, body, format="json", HTTP_IF_MATCH=tag)
            assert_error(response, 412, "precondition_failed")
    agent = AgentSnapshot.objects.select_related("workspace__project").get(pk="a1")
    assert agent.version == 1 and not agent.is_archived
    assert not AgentSnapshot.objects.filter(pk="a2").exists()
    assert agent.workspace.display_name != "w" and agent.workspace.project.display_name != "p"
    assert not agent.workspace.project.is_archived


def test_patch_every_updatable_field(api):
    AgentFactory(agent_id="a1")
    at = "2030-01-02T03:04:05.678901+02:00"
    changes = {
        "provider": "codex",
        "title": "T",
        "labels": {"k": "v"},
        "lifecycle": "error",
        "last_mode_id": "plan",
        "config": {"c": 1},
        "runtime_info": {"r": [1]},
        "persistence": {"p": None},
        "requires_attention": True,
        "attention_reason": "permission",
        "attention_at": at,
        "internal": True,
    }
    body = api.patch("/api/v1/agents/a1", changes, format="json").json()
    for name, value in changes.items():
        if name.endswith("_at"):
            assert body[name] == "2030-01-02T01:04:05.678901+00:00", (name, body[name])
        else:
            assert body[name] == value, name
    cleared = api.patch(
        "/api/v1/agents/a1",
        {"title": None, "labels": None, "config": None, "requires_attention": False, "attention_at": None},
        format="json",
    ).json()
    assert (cleared["title"], cleared["labels"], cleared["config"]) == ("", {}, {})
    assert cleared["attention_reason"] is None


@pytest.mark.parametrize(
    "changes, fields",
    [
        ({"workspace_id": 2}, ["workspace_id"]),
        ({"agent_id": "other"}, ["agent_id"]),
        ({"head_seq": 10}, ["head_seq"]),
        ({"attention_at": "yesterday"}, ["attention_at"]),
        ({"attention_at": "0001-01-01T00:00:00+14:00"}, ["attention_at"]),
        # Set by timeline appends only.
        ({"last_activity_at": "2024-02-01T00:00:00Z"}, ["last_activity_at"]),
        ({"last_user_message_at": None}, ["last_user_message_at"]),
        ({"provider": None}, ["provider"]),
    ],
)
def test_patch_invalid_is_400(api, changes, fields):
    AgentFactory(agent_id="a1")
    assert_error(api.patch("/api/v1/agents/a1", changes, format="json"), 400, "invalid", fields=fields)
    assert AgentSnapshot.objects.get(pk="a1").version == 1


def test_archive_unarchive_agent(api):
    agent = AgentFactory(agent_id="a1", lifecycle="running")
    response = api.post("/api/v1/agents/a1/archive")
    assert response.status_code == 200
    body = response.json()
    assert body["archived"] == {"agents": 1}
    assert body["agent"]["lifecycle"] == "closed" and body["agent"]["archived_at"]
    assert response["ETag"] == f'"{body["agent"]["version"]}"'
    assert api.post("/api/v1/agents/a1/archive").json()["archived"] == {"agents": 0}
    assert_error(api.patch("/api/v1/agents/a1", {"title": "x"}, format="json"), 409, "archived")

    response = api.post("/api/v1/agents/a1/unarchive")
    assert response.json()["restored"] == {"agents": 1}
    assert response.json()["agent"]["archived_at"] is None
    assert api.post("/api/v1/agents/a1/unarchive").json()["restored"] == {"agents": 0}

    api.post(f"/api/v1/workspaces/{agent.workspace_id}/archive")
    assert_error(api.post("/api/v1/agents/a1/unarchive"), 409, "archived")
    assert_error(api.post("/api/v1/agents/nope/archive"), 404, "not_found")
    assert_error(api.post("/api/v1/agents/nope/unarchive"), 404, "not_found")


def test_list_filters(api):
    project = ProjectFactory()
    ws1, ws2 = WorkspaceFactory(project=project), WorkspaceFactory(project=project)
    elsewhere = WorkspaceFactory()
    a = AgentFactory(agent_id="a", workspace=ws1, lifecycle="running", provider="claude")
    AgentFactory(agent_id="b", workspace=ws2, lifecycle="idle", provider="codex")
    c = AgentFactory(agent_id="c", workspace=elsewhere, lifecycle="idle", provider="claude")
    AgentFactory(agent_id="d", workspace=ws1)
    api.patch("/api/v1/agents/b", {"requires_attention": True, "attention_reason": "finished"}, format="json")
    api.post("/api/v1/agents/d/archive")

    assert agent_ids(api.get("/api/v1/agents")) == ["a", "b", "c"]
    assert agent_ids(api.get(f"/api/v1/agents?workspace_id={ws1.pk}")) == ["a"]
    assert agent_ids(api.get(f"/api/v1/agents?workspace_id={ws1.pk}&archived=all")) == ["a", "d"]
    assert agent_ids(api.get(f"/api/v1/agents?project_id={project.pk}")) == ["a", "b"]
    assert agent_ids(api.get("/api/v1/agents?lifecycle=idle")) == ["b", "c"]
    assert agent_ids(api.get("/api/v1/agents?requires_attention=true")) == ["b"]
    assert agent_ids(api.get("/api/v1/agents?requires_attention=false")) == ["a", "c"]
    assert agent_ids(api.get("/api/v1/agents?provider=claude")) == ["a", "c"]
    assert agent_ids(api.get("/api/v1/agents?archived=true")) == ["d"]
    rows = api.get("/api/v1/agents").json()["results"]
    assert [row["project_id"] for row in rows] == [project.pk, project.pk, elsewhere.project_id]
    for query, field in [
        ("requires_attention=yes", "requires_attention"),
        ("lifecycle=zzz", "lifecycle"),
        ("workspace_id=-3", "workspace_id"),
        ("project_id=1e3", "project_id"),
        ("provider=%00", "provider"),
        ("archived=none", "archived"),
    ]:
        assert_error(api.get(f"/api/v1/agents?{query}"), 400, "invalid", fields=[field])
    del a, c


def test_list_does_not_query_per_row(api, django_assert_max_num_queries):
    workspace = WorkspaceFactory()
    for n in range(20):
        AgentFactory(workspace=workspace, agent_id=f"n{n:02}")
    with django_assert_max_num_queries(3):
        response = api.get("/api/v1/agents")
    assert len(response.json()["results"]) == 20


@pytest.mark.parametrize("agent_id", [".", ".."])
def test_dot_segment_agent_ids_are_refused_everywhere(api, agent_id):
    workspace = WorkspaceFactory()
    response = api.post(
        "/api/v1/agents", {"agent_id": agent_id, "workspace_id": workspace.pk, "provider": "x"}, format="json"
    )
    assert_error(response, 400, "invalid", fields=["agent_id"])
    assert "'.' or '..'" in response.json()["error"]["fields"]["agent_id"][0]
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentSnapshot.objects.bulk_create([AgentSnapshot(agent_id=agent_id, workspace=workspace, provider="x")])
    assert (
        api.post(
            "/api/v1/agents", {"agent_id": "...", "workspace_id": workspace.pk, "provider": "x"}, format="json"
        ).status_code
        == 201
    )


def test_cwd_is_kept_normalized_even_below_the_workspace(api):
    workspace = WorkspaceFactory(directory="/srv/repo")
    body = api.post(
        "/api/v1/agents",
        {"workspace_id": workspace.pk, "provider": "claude", "agent_id": "sub", "cwd": "/srv/repo//pkg/ui/"},
        format="json",
    ).json()
    assert body["cwd"] == "/srv/repo/pkg/ui" and body["workspace_id"] == workspace.pk
    bad = api.post(
        "/api/v1/agents", {"workspace_id": workspace.pk, "provider": "claude", "cwd": "relative/dir"}, format="json"
    )
    assert_error(bad, 400, "invalid", fields=["cwd"])


@pytest.mark.parametrize("cwd", ["/srv/other", "/srv/repository", "/srv", "/"])
def test_a_cwd_outside_the_workspace_is_refused_and_nothing_is_written(api, cwd):
    workspace = WorkspaceFactory(directory="/srv/repo")
    response = api.post(
        "/api/v1/agents",
        {"workspace_id": workspace.pk, "provider": "claude", "agent_id": "out", "cwd": cwd},
        format="json",
    )
    assert_error(response, 400, "invalid", fields=["cwd"])
    assert response.json()["error"]["fields"]["cwd"] == [CWD_OUTSIDE_WORKSPACE]
    assert not AgentSnapshot.objects.filter(pk="out").exists()


def test_a_workspace_at_the_root_holds_any_cwd(api):
    workspace = WorkspaceFactory(directory="/")
    response = api.post(
        "/api/v1/agents", {"workspace_id": workspace.pk, "provider": "claude", "cwd": "/srv/x"}, format="json"
    )
    assert response.status_code == 201 and response.json()["cwd"] == "/srv/x"
