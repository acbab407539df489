"""No N+1: every admin list page runs the same number of queries for 5 rows and for 50."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from legacy.models import ImportRun
from registry.services import archive_workspace
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.models import TimelineHead, TimelineRow
from tokens.services import create_api_token

pytestmark = pytest.mark.django_db

LIST_PAGES = [
    ("admin:registry_project_changelist", {}),
    ("admin:registry_project_changelist", {"archived": "no", "o": "4"}),
    ("admin:registry_workspace_changelist", {}),
    ("admin:registry_workspace_changelist", {"archived": "all"}),
    ("admin:snapshots_agentsnapshot_changelist", {}),
    ("admin:snapshots_agentsnapshot_changelist", {"lifecycle__exact": "idle", "q": "agent"}),
    ("admin:tokens_apitoken_changelist", {}),
    ("admin:legacy_importrun_changelist", {}),
    ("admin:timeline_timelinerow_changelist", {}),
]


def grow_to(count: int, existing: int) -> None:
    """``count`` of everything: projects with two workspaces (one archived), agents, rows, tokens, runs."""
    now = timezone.now()
    for n in range(existing, count):
        project = ProjectFactory()
        workspace = WorkspaceFactory(project=project)
        spare = WorkspaceFactory(project=project)
        AgentFactory(workspace=spare)
        archive_workspace(workspace=spare)
        agent = AgentFactory(workspace=workspace, last_activity_at=now)
        TimelineRow.objects.bulk_create(
            [TimelineRow(agent=agent, seq=1, committed_at=now, item_type="user_message", item={"type": "user_message"})]
        )
        TimelineHead.objects.filter(pk=agent.pk).update(head_seq=1)
        create_api_token(name=f"token-{n}")
        ImportRun.objects.create(source_path=f"/legacy/{n}.json", started_at=now, finished_at=now, counts={})


def queries_per_page(client) -> dict[str, int]:
    counts = {}
    for name, params in LIST_PAGES:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(reverse(name), params)
        assert response.status_code == 200, name
        counts[f"{name} {params}"] = len(ctx.captured_queries)
    return counts


def test_list_pages_cost_the_same_for_5_and_50_rows(admin_client):
    grow_to(5, 0)
    small = queries_per_page(admin_client)
    grow_to(50, 5)
    large = queries_per_page(admin_client)
    assert large == small
    # and the pages really did show 50 rows
    response = admin_client.get(reverse("admin:snapshots_agentsnapshot_changelist"), {"archived": "all"})
    assert len(response.context["cl"].result_list) == 100
