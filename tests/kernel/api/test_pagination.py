from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from django.utils import timezone

from kernel.api.pagination import encode_cursor, list_scope
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db


def walk(api, url: str, *, limit: int, between_pages=None) -> list:
    seen, cursor, pages = [], None, 0
    while True:
        query = f"limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        response = api.get(f"{url}?{query}")
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"results", "next_cursor"}
        assert len(body["results"]) <= limit
        seen.extend(body["results"])
        cursor = body["next_cursor"]
        pages += 1
        assert pages < 100
        if cursor is None:
            return seen
        if between_pages:
            between_pages(pages)


def test_default_limit_is_50_and_max_is_500(api):
    for n in range(51):
        ProjectFactory(directory=f"/p/{n}")
    body = api.get("/api/v1/projects").json()
    assert len(body["results"]) == 50 and body["next_cursor"]
    last = api.get(f"/api/v1/projects?cursor={body['next_cursor']}").json()
    assert len(last["results"]) == 1 and last["next_cursor"] is None
    assert len(api.get("/api/v1/projects?limit=500").json()["results"]) == 51
    for bad in ("0", "501", "-1", "abc", "1.5", "9" * 5000, "%00"):
        assert_error(api.get(f"/api/v1/projects?limit={bad}"), 400, "invalid", fields=["limit"])


def test_exact_page_boundary_has_no_empty_trailing_page(api):
    for n in range(4):
        ProjectFactory(directory=f"/p/{n}")
    first = api.get("/api/v1/projects?limit=4").json()
    assert len(first["results"]) == 4 and first["next_cursor"] is None


def test_paging_stays_correct_while_rows_are_added(api):
    for n in range(7):
        ProjectFactory(directory=f"/p/{n}")
    before = set(ProjectFactory._meta.model.objects.values_list("pk", flat=True))
    added = []

    def add_rows(page: int) -> None:
        added.append(ProjectFactory(directory=f"/p/added-{page}").pk)

    rows = walk(api, "/api/v1/projects", limit=3, between_pages=add_rows)
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)), "a row repeated"
    assert before <= set(ids), "a row was skipped"
    # Rows added while paging show up at the end, never shifting earlier pages.
    assert ids == sorted(ids)


def test_agents_page_by_created_at_then_agent_id(api):
    workspace = WorkspaceFactory()
    for name in ["b", "a", "d", "c", "e"]:
        AgentFactory(workspace=workspace, agent_id=name)
    # Same creation instant for several agents: agent_id breaks the tie.
    same = timezone.now() - dt.timedelta(days=1)
    AgentSnapshot.objects.filter(agent_id__in=["c", "d", "e"]).update(created_at=same)

    def add_agent(page: int) -> None:
        AgentFactory(workspace=workspace, agent_id=f"z-new-{page}")

    rows = walk(api, "/api/v1/agents", limit=2, between_pages=add_agent)
    ids = [row["agent_id"] for row in rows]
    assert ids[:5] == ["c", "d", "e", "b", "a"]
    assert len(ids) == len(set(ids))
    assert set(ids) >= {"a", "b", "c", "d", "e"}


def b64(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "not-base64!!",
        "%00",
        b64("string"),
        b64([1, 2]),
        b64([2**63]),
        b64([True]),
        b64([1.5]),
        b64({"id": 1}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "A" * 5000,
    ],
)
def test_invalid_project_cursor_is_400(api, cursor):
    ProjectFactory()
    assert_error(api.get(f"/api/v1/projects?cursor={cursor}"), 400, "invalid", fields=["cursor"])


@pytest.mark.parametrize(
    "values",
    [
        [1],
        ["2024-01-01T00:00:00", "a"],
        ["2024-13-01T00:00:00+00:00", "a"],
        ["2024-01-01T00:00:00+00:00", "a\x00"],
        ["2024-01-01T00:00:00+00:00", "\ud800"],
        ["2024-01-01T00:00:00+00:00", "x" * 129],
        ["2024-01-01T00:00:00+00:00", 5],
    ],
)
def test_invalid_agent_cursor_is_400(api, values):
    AgentFactory()
    cursor = b64([*values, list_scope("/api/v1/agents", None, [])])
    assert_error(api.get(f"/api/v1/agents?cursor={cursor}"), 400, "invalid", fields=["cursor"])


def test_cursor_round_trips_values(api):
    workspace = WorkspaceFactory()
    AgentFactory(workspace=workspace, agent_id="a")
    second = AgentFactory(workspace=workspace, agent_id="b")
    first = AgentSnapshot.objects.get(pk="a")
    cursor = encode_cursor([first.created_at, first.agent_id], scope=list_scope("/api/v1/agents", None, []))
    rows = api.get(f"/api/v1/agents?cursor={cursor}").json()["results"]
    assert [row["agent_id"] for row in rows] == [second.agent_id]


def test_a_cursor_continues_only_the_list_it_came_from(api):
    for n in range(3):
        ProjectFactory(directory=f"/p/{n}")
        WorkspaceFactory()
    cursor = api.get("/api/v1/projects?limit=1").json()["next_cursor"]
    # Its own list, same filters: the next page.
    assert api.get(f"/api/v1/projects?limit=1&cursor={cursor}").status_code == 200
    # /workspaces pages by the same key: the values would parse, the list is another.
    response = api.get(f"/api/v1/workspaces?limit=1&cursor={cursor}")
    assert_error(response, 400, "invalid", fields=["cursor"])
    assert "another list" in response.json()["error"]["fields"]["cursor"][0]
    # The same list with other filters is another list too.
    assert_error(api.get(f"/api/v1/projects?archived=true&cursor={cursor}"), 400, "invalid", fields=["cursor"])


def test_a_cursor_keeps_working_with_its_filters_in_any_order(api):
    for n in range(4):
        ProjectFactory(directory=f"/p/{n}")
    first = api.get("/api/v1/projects?limit=1&archived=false&kind=git").json()
    cursor = first["next_cursor"]
    second = api.get(f"/api/v1/projects?kind=git&cursor={cursor}&archived=false&limit=2")
    assert second.status_code == 200, second.content
    assert [row["id"] for row in second.json()["results"]] == [
        row["id"] for row in api.get("/api/v1/projects?limit=3&archived=false&kind=git").json()["results"][1:]
    ]
