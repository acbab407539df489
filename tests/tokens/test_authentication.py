from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from registry.models import Project
from tests.factories import AgentFactory
from tests.support.api import assert_error, client_with
from tokens.models import ApiToken
from tokens.services import create_api_token, revoke_api_token

pytestmark = pytest.mark.django_db


def every_endpoint(agent) -> list[tuple[str, str]]:
    workspace = agent.workspace
    return [
        ("get", "/api/v1/projects"),
        ("post", "/api/v1/projects"),
        ("get", f"/api/v1/projects/{workspace.project_id}"),
        ("patch", f"/api/v1/projects/{workspace.project_id}"),
        ("post", f"/api/v1/projects/{workspace.project_id}/archive"),
        ("post", f"/api/v1/projects/{workspace.project_id}/unarchive"),
        ("get", "/api/v1/workspaces"),
        ("post", "/api/v1/workspaces"),
        ("get", f"/api/v1/workspaces/{workspace.pk}"),
        ("patch", f"/api/v1/workspaces/{workspace.pk}"),
        ("post", f"/api/v1/workspaces/{workspace.pk}/archive"),
        ("post", f"/api/v1/workspaces/{workspace.pk}/unarchive"),
        ("get", "/api/v1/agents"),
        ("post", "/api/v1/agents"),
        ("get", f"/api/v1/agents/{agent.agent_id}"),
        ("patch", f"/api/v1/agents/{agent.agent_id}"),
        ("post", f"/api/v1/agents/{agent.agent_id}/archive"),
        ("post", f"/api/v1/agents/{agent.agent_id}/unarchive"),
        ("get", "/api/v1/schema"),
        ("get", "/api/v1/docs"),
    ]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Token abc",
        "Basic dXNlcjpwYXNz",
        "Bearer two words",
        "Bearer chartr_unknown",
        "Bearer caf\xe9",
    ],
)
def test_missing_malformed_or_unknown_token_is_401_everywhere(header):
    agent = AgentFactory()
    client = client_with(None)
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    for method, url in every_endpoint(agent):
        response = client.get(url) if method == "get" else getattr(client, method)(url, {}, format="json")
        assert_error(response, 401, "not_authenticated")
        assert response["WWW-Authenticate"] == "Bearer"
    assert Project.objects.count() == 1


def test_revoked_token_is_401():
    token, raw = create_api_token(name="soon revoked")
    client = client_with(raw)
    assert client.get("/api/v1/projects").status_code == 200
    revoke_api_token(token=token)
    assert_error(client.get("/api/v1/projects"), 401, "not_authenticated")


def test_read_only_token_reads_but_gets_403_on_every_write(read_only_api):
    agent = AgentFactory()
    for method, url in every_endpoint(agent):
        if method == "get":
            response = read_only_api.get(url)
            assert response.status_code == 200, (url, response.content[:200])
        else:
            response = getattr(read_only_api, method)(url, {"display_name": "x"}, format="json")
            assert_error(response, 403, "permission_denied")
    agent.refresh_from_db()
    assert agent.archived_at is None and agent.version == 1


def test_last_used_at_is_recorded_and_only_the_hash_is_stored():
    token, raw = create_api_token(name="tracked")
    assert token.last_used_at is None
    assert raw not in {token.token_hash, token.prefix}
    client_with(raw).get("/api/v1/projects")
    token.refresh_from_db()
    assert token.last_used_at is not None
    assert timezone.now() - token.last_used_at < dt.timedelta(seconds=30)
    assert not ApiToken.objects.filter(token_hash=raw).exists()
