"""Text PostgreSQL cannot compare (NUL) gets the same clean 4xx on both databases, at the edge.

Before, ``/api/v1/agents/a%00b/timeline`` and the admin's change pages were a
500 on PostgreSQL (psycopg refuses NUL in a text parameter) and a 404 on
SQLite. These tests run on whichever database the run uses; CI runs both.
"""

from __future__ import annotations

import pytest

from tests.factories import AgentFactory, ProjectFactory
from tests.support.api import assert_error
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db

BAD_IDS = ["a%00b", "%00", "a%01b", "a%0Ab", "a%1Fb", "a%7Fb"]

AGENT_PATHS = [
    ("get", "/api/v1/agents/{id}"),
    ("patch", "/api/v1/agents/{id}"),
    ("post", "/api/v1/agents/{id}/archive"),
    ("post", "/api/v1/agents/{id}/unarchive"),
    ("get", "/api/v1/agents/{id}/timeline"),
    ("post", "/api/v1/agents/{id}/timeline"),
    ("get", "/api/v1/agents/{id}/timeline/stream"),
    ("post", "/api/v1/agents/{id}/timeline/provisional"),
]


@pytest.mark.parametrize("bad_id", BAD_IDS)
@pytest.mark.parametrize(("method", "template"), AGENT_PATHS)
def test_a_control_character_in_an_agent_id_is_a_clean_404_with_the_envelope(api, method, template, bad_id):
    AgentFactory(agent_id="ab")
    path = template.format(id=bad_id)
    response = getattr(api, method)(path, {}, format="json") if method != "get" else api.get(path)
    assert_error(response, 404, "not_found")


@pytest.mark.parametrize(
    "path",
    [
        "/admin/snapshots/agentsnapshot/a%00b/change/",
        "/admin/snapshots/agentsnapshot/a%00b/delete/",
        "/admin/snapshots/agentsnapshot/a%00b/history/",
        "/admin/snapshots/agentsnapshot/%00/change/",
        "/admin/timeline/timelinerow/a%00b/change/",
        "/admin/registry/project/1%00/change/",
    ],
)
def test_a_nul_in_an_admin_path_is_a_plain_404(admin_client, path):
    AgentFactory(agent_id="ab")
    response = admin_client.get(path)
    assert response.status_code == 404
    assert b"Traceback" not in response.content


@pytest.mark.parametrize(
    "path",
    [
        "/admin/snapshots/agentsnapshot/?q=a%00b",
        "/admin/timeline/timelinerow/?q=a%00b",
        "/admin/registry/project/?q=%00",
        "/admin/registry/workspace/?q=x%00",
        "/admin/snapshots/agentsnapshot/ab/change/?before_seq=%00",
    ],
)
def test_a_nul_in_an_admin_query_is_a_plain_400(admin_client, path):
    AgentFactory(agent_id="ab")
    response = admin_client.get(path)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/api/v1/projects?search=a%00b", "search"),
        ("/api/v1/projects?directory=/a%00b", "directory"),
        ("/api/v1/workspaces?directory=%00", "directory"),
        ("/api/v1/agents?cursor=%00", "cursor"),
        ("/api/v1/agents/ab/timeline?epoch=e%00", "epoch"),
        ("/api/v1/agents/ab/timeline/stream?epoch=%00", "epoch"),
    ],
)
def test_a_nul_in_a_query_value_is_400_invalid_naming_the_parameter(api, path, name):
    AgentFactory(agent_id="ab")
    assert_error(api.get(path), 400, "invalid", fields=[name])


def test_control_characters_other_than_nul_in_a_query_value_are_ordinary_text(api):
    ProjectFactory(directory="/srv/tab\there")
    response = api.get("/api/v1/projects?search=tab%09here")
    assert response.status_code == 200, response.content
    assert [p["directory"] for p in response.json()["results"]] == ["/srv/tab\there"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/projects", {"directory": "/srv/a\x00b", "kind": "git"}, "directory"),
        ("/api/v1/projects", {"directory": "/srv/a", "kind": "git", "display_name": "a\x00"}, "display_name"),
        ("/api/v1/agents/ab/timeline", {"items": [{"item": {"type": "x", "text": "\x00"}}]}, "items[0].item.text"),
        ("/api/v1/agents/ab/timeline", {"items": [{"item": {"type": "x"}, "item_id": "k\x00"}]}, "items[0].item_id"),
        (
            "/api/v1/agents/ab/timeline",
            {"items": [{"item": {"type": "x", "turn_id": "t\x00"}}]},
            "items[0].item.turn_id",
        ),
        ("/api/v1/agents/ab/timeline/provisional", {"item": {"type": "x", "text": "a\x00"}}, "item.text"),
        ("/api/v1/agents", {"agent_id": "n", "workspace_id": 1, "provider": "p\x00"}, "provider"),
    ],
)
def test_a_nul_in_a_json_body_string_is_400_invalid_naming_the_field(api, path, body, field):
    AgentFactory(agent_id="ab")
    assert_error(api.post(path, body, format="json"), 400, "invalid", fields=[field])
    assert TimelineRow.objects.count() == 0
