"""The admin dashboard."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from dashboard.selectors import DASHBOARD_LIST_SIZE
from registry.services import archive_project
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.models import TimelineHead, TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db


class TestDashboard:
    def test_counts_attention_and_recent_activity(self, admin_client):
        live = ProjectFactory()
        WorkspaceFactory(project=live)
        gone = ProjectFactory()
        WorkspaceFactory(project=gone)
        AgentFactory(workspace=WorkspaceFactory(project=gone), agent_id="gone-agent", lifecycle="running")
        archive_project(project=gone)
        workspace = WorkspaceFactory(project=live)
        now = timezone.now()
        AgentFactory(
            workspace=workspace,
            agent_id="older-attention",
            requires_attention=True,
            attention_reason="error",
            attention_at=now - dt.timedelta(hours=2),
        )
        AgentFactory(
            workspace=workspace,
            agent_id="newer-attention",
            requires_attention=True,
            attention_reason="permission",
            attention_at=now - dt.timedelta(minutes=5),
        )
        AgentFactory(
            workspace=workspace, agent_id="busy", lifecycle="running", last_activity_at=now - dt.timedelta(minutes=1)
        )
        AgentFactory(workspace=workspace, agent_id="idle-one", last_activity_at=now - dt.timedelta(hours=3))

        response = admin_client.get(reverse("admin:index"))
        assert response.status_code == 200
        text = response.content.decode()
        dashboard = response.context["dashboard"]
        assert (dashboard.projects.live, dashboard.projects.archived) == (1, 1)
        assert (dashboard.workspaces.live, dashboard.workspaces.archived) == (2, 2)
        assert dict(dashboard.agents_by_lifecycle) == {
            "initializing": 0,
            "idle": 3,
            "running": 1,
            "error": 0,
            "closed": 0,
        }
        assert dashboard.archived_agents == 1
        assert [a.agent_id for a in dashboard.attention.longest_waiting] == ["older-attention", "newer-attention"]
        assert [a.agent_id for a in dashboard.recently_active] == ["busy", "idle-one"]
        assert 'data-lifecycle="running"><span>running</span> <span>1</span>' in text
        assert text.index("older-attention") < text.index("newer-attention")
        assert reverse("admin:snapshots_agentsnapshot_change", args=["busy"]) in text
        # the app list is still there below the dashboard
        assert reverse("admin:registry_project_changelist") in text
        assert reverse("data-snapshots") in text

    def test_data_snapshots_link_needs_its_permission(self, client, django_user_model):
        staff = django_user_model.objects.create_user("staffer", password="pw", is_staff=True)
        client.force_login(staff)
        assert reverse("data-snapshots") not in client.get(reverse("admin:index")).content.decode()

    def test_data_snapshots_link_promises_only_what_the_user_may_do(self, client, admin_client, django_user_model):
        from django.contrib.auth.models import Permission

        def link(client) -> str:
            html = client.get(reverse("admin:index")).content.decode()
            return html.split('id="dash-data-snapshots"')[1].split("</a>")[0]

        assert "List, take or restore data snapshots" in link(admin_client)
        viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
        viewer.user_permissions.set(Permission.objects.filter(codename="view_data_snapshots"))
        client.force_login(viewer)
        text = link(client)
        assert "List data snapshots" in text and "take" not in text and "restore" not in text
        viewer.user_permissions.add(Permission.objects.get(codename="take_data_snapshot"))
        text = link(client)
        assert "List or take data snapshots" in text and "restore" not in text

    def test_the_cards_link_to_the_lists_they_count(self, admin_client, client, django_user_model):
        html = admin_client.get(reverse("admin:index")).content.decode()
        for card, url in (
            ("dash-projects", reverse("admin:registry_project_changelist")),
            ("dash-workspaces", reverse("admin:registry_workspace_changelist")),
            ("dash-agents", reverse("admin:snapshots_agentsnapshot_changelist")),
            ("dash-data-snapshots", reverse("data-snapshots")),
        ):
            assert f'<a href="{url}" class="dash-card" id="{card}">' in html
        staff = django_user_model.objects.create_user("staffer", password="pw", is_staff=True)
        client.force_login(staff)
        html = client.get(reverse("admin:index")).content.decode()
        assert (
            '<div class="dash-card" id="dash-projects">' in html
            and 'class="dash-card" id="dash-projects" href' not in html
        )

    def test_dashboard_query_count_does_not_grow_with_the_fleet(self, admin_client):
        def index_queries() -> int:
            with CaptureQueriesContext(connection) as ctx:
                assert admin_client.get(reverse("admin:index")).status_code == 200
            return len(ctx.captured_queries)

        workspace = WorkspaceFactory()
        AgentFactory(
            workspace=workspace, requires_attention=True, attention_reason="error", last_activity_at=timezone.now()
        )
        small = index_queries()
        for _ in range(10):
            AgentFactory(
                workspace=WorkspaceFactory(),
                requires_attention=True,
                attention_reason="finished",
                last_activity_at=timezone.now(),
            )
            AgentSnapshot.objects.filter(pk=AgentFactory(lifecycle="running").pk).update(last_seen_at=None)
        assert len(admin_client.get(reverse("admin:index")).context["dashboard"].stale_running) == 10
        assert index_queries() == small

    def test_lists_stale_running_agents_longest_silent_first(self, admin_client, settings):
        settings.CHARTR_STALE_AFTER_SECONDS = 60
        now = timezone.now()
        for agent_id, silent in [("recent", 30), ("silent-5m", 300), ("silent-1h", 3600)]:
            agent = AgentFactory(agent_id=agent_id, lifecycle="running")
            AgentSnapshot.objects.filter(pk=agent.pk).update(last_seen_at=now - dt.timedelta(seconds=silent))
        imported = AgentFactory(agent_id="imported", lifecycle="running")
        AgentSnapshot.objects.filter(pk=imported.pk).update(last_seen_at=None)
        response = admin_client.get(reverse("admin:index"))
        assert [a.agent_id for a in response.context["dashboard"].stale_running] == [
            "imported",
            "silent-1h",
            "silent-5m",
        ]
        section = response.content.decode().split('id="dash-stale"')[1].split('id="dash-recent"')[0]
        assert "never (imported)" in section and 'data-agent="recent"' not in section
        # how many, and a way to all of them: the agent list filtered to the stale ones
        assert response.context["dashboard"].stale_total == 3
        assert "Stale running agents (3), the longest silent first" in section
        see_all = reverse("admin:snapshots_agentsnapshot_changelist") + "?stale=yes"
        assert f'id="dash-stale-all" href="{see_all}">See all 3</a>' in section
        listed = admin_client.get(see_all).content.decode()
        assert all(f'data-copy="{agent_id}"' in listed for agent_id in ("imported", "silent-1h", "silent-5m"))
        assert 'data-copy="recent"' not in listed

    def test_the_stale_count_is_all_of_them_when_the_list_shows_a_few(self, admin_client, settings):
        settings.CHARTR_STALE_AFTER_SECONDS = 60
        for n in range(DASHBOARD_LIST_SIZE + 2):
            agent = AgentFactory(agent_id=f"silent-{n}", lifecycle="running")
            AgentSnapshot.objects.filter(pk=agent.pk).update(last_seen_at=None)
        response = admin_client.get(reverse("admin:index"))
        dashboard = response.context["dashboard"]
        total = DASHBOARD_LIST_SIZE + 2
        assert dashboard.stale_total == total and len(dashboard.stale_running) == DASHBOARD_LIST_SIZE
        assert f">See all {total}</a>" in response.content.decode().split('id="dash-stale"')[1]

    def test_no_stale_agents_says_so(self, admin_client):
        AgentFactory(lifecycle="running")
        text = admin_client.get(reverse("admin:index")).content.decode()
        assert "No running agent has gone silent." in text


class TestAttention:
    """Every agent needing attention is counted, by reason, and listed the longest waiting first."""

    def make_waiting(self, count: int, reason: str | None, *, hours_ago: int, prefix: str) -> None:
        now = timezone.now()
        for n in range(count):
            AgentFactory(
                agent_id=f"{prefix}-{n}",
                requires_attention=True,
                attention_reason=reason,
                attention_at=now - dt.timedelta(hours=hours_ago, minutes=n),
            )

    def test_counts_every_reason_and_lists_the_longest_waiting_first(self, admin_client):
        self.make_waiting(3, "permission", hours_ago=30, prefix="perm")
        self.make_waiting(20, "finished", hours_ago=1, prefix="done")
        self.make_waiting(2, None, hours_ago=2, prefix="bare")
        unknown = AgentFactory(agent_id="imported-waiting", requires_attention=True, attention_reason="error")
        AgentSnapshot.objects.filter(pk=unknown.pk).update(attention_at=None)
        gone = AgentFactory(agent_id="archived-waiting", requires_attention=True, attention_reason="permission")
        archive_agent(agent=gone)
        AgentFactory(agent_id="calm")

        response = admin_client.get(reverse("admin:index"))
        attention = response.context["dashboard"].attention
        assert attention.total == 26
        assert attention.by_reason == [("finished", 20), ("error", 1), ("permission", 3), ("none", 2)]
        waiting = [agent.agent_id for agent in attention.longest_waiting]
        # the three permission waits (30 h) come first, oldest of them first; the list is capped, the counts are not
        assert waiting[:5] == ["perm-2", "perm-1", "perm-0", "bare-1", "bare-0"]
        assert len(waiting) == 20 and attention.more == 6
        assert "imported-waiting" not in waiting and "archived-waiting" not in waiting
        section = response.content.decode().split('id="dash-attention"')[1].split('id="dash-stale"')[0]
        changelist = reverse("admin:snapshots_agentsnapshot_changelist")
        assert f'href="{changelist}?attention=permission">3 permission</a>' in section
        assert f'href="{changelist}?attention=none">2 without a reason</a>' in section
        assert f'href="{changelist}?attention=any">See all 26</a>' in section
        assert "6 more waiting: see all 26" in section

    def test_see_all_lists_every_one_the_longest_waiting_first(self, admin_client):
        self.make_waiting(3, "permission", hours_ago=30, prefix="perm")
        self.make_waiting(2, "finished", hours_ago=1, prefix="done")
        unknown = AgentFactory(agent_id="imported-waiting", requires_attention=True, attention_reason="permission")
        AgentSnapshot.objects.filter(pk=unknown.pk).update(attention_at=None)
        AgentFactory(agent_id="calm")
        changelist = reverse("admin:snapshots_agentsnapshot_changelist")

        def listed(**params) -> list[str]:
            response = admin_client.get(changelist, params)
            assert response.status_code == 200
            return [agent.agent_id for agent in response.context["cl"].result_list]

        assert listed(attention="permission") == ["perm-2", "perm-1", "perm-0", "imported-waiting"]
        assert listed(attention="any") == ["perm-2", "perm-1", "perm-0", "done-1", "done-0", "imported-waiting"]
        assert listed(attention="none") == []
        # without the filter the list keeps its own order, newest first
        assert listed()[0] == "calm"

    def test_no_agent_waiting_says_so(self, admin_client):
        AgentFactory()
        response = admin_client.get(reverse("admin:index"))
        section = response.content.decode().split('id="dash-attention"')[1].split('id="dash-stale"')[0]
        assert "No agent needs attention." in section and "See all" not in section


class TestGrowth:
    def test_totals_largest_agents_and_rows_per_day(self, admin_client):
        workspace = WorkspaceFactory()
        for agent_id, rows in [("small", 1), ("big", 5), ("empty", 0)]:
            AgentFactory(workspace=workspace, agent_id=agent_id)
            if rows:
                append_timeline_items(
                    agent_id=agent_id,
                    items=[NewTimelineItem(item={"type": "user_message", "text": "x" * 100}) for _ in range(rows)],
                )
        # Two rows committed nine days ago, one of them already outside a 7-day window.
        nine_days_ago = timezone.now() - dt.timedelta(days=9)
        TimelineRow.objects.filter(agent_id="big", seq__in=[1, 2]).update(committed_at=nine_days_ago)

        response = admin_client.get(reverse("admin:index"))
        growth = response.context["dashboard"].growth
        assert growth.timeline_rows == 6
        assert growth.timeline_bytes == sum(TimelineHead.objects.values_list("committed_bytes", flat=True))
        assert [agent.agent_id for agent in growth.largest] == ["big", "small"]
        assert len(growth.rows_per_day) == 30
        per_day = dict(growth.rows_per_day)
        assert per_day[timezone.localdate()] == 4
        assert per_day[timezone.localdate(nine_days_ago)] == 2
        assert sum(per_day.values()) == 6

        text = response.content.decode()
        chart = text.split('id="dash-growth"')[1].split('id="dash-largest"')[0]
        assert chart.count('<rect class="dash-bar"') == 30
        assert f"<title>{timezone.localdate().isoformat()}: 4 rows</title>" in chart
        assert "<script" not in chart and "http" not in chart.replace("http://www.w3.org/2000/svg", "")

    def test_an_empty_fleet_draws_an_empty_chart(self, admin_client):
        text = admin_client.get(reverse("admin:index")).content.decode()
        assert "No agent has history yet." in text
        assert "peak 0/day" in text


def test_appends_make_an_agent_recently_active(admin_client):
    agent = AgentFactory(agent_id="talker")
    empty = admin_client.get(reverse("admin:index")).content.decode()
    assert "No agent activity yet." in empty
    append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item={"type": "user_message", "text": "hi"})])
    response = admin_client.get(reverse("admin:index"))
    assert [a.agent_id for a in response.context["dashboard"].recently_active] == ["talker"]
    assert "No agent activity yet." not in response.content.decode()
