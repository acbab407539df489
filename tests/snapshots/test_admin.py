from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.urls import reverse
from django.utils import timezone

from registry.services import archive_workspace
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent, update_agent
from tests.factories import AgentFactory, WorkspaceFactory
from tests.support.admin import messages_of

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"admin:snapshots_agentsnapshot_{name}", args=args)


def add_data(workspace, **overrides):
    data = {
        "workspace": workspace.pk,
        "agent_id": "",
        "provider": "claude",
        "title": "Fix the build",
        "lifecycle": "idle",
        "last_mode_id": "",
        "labels": "{}",
        "config": "{}",
        "attention_reason": "",
    }
    data.update(overrides)
    return data


def change_data(agent, **overrides):
    data = {
        "provider": agent.provider,
        "title": agent.title,
        "lifecycle": agent.lifecycle,
        "last_mode_id": agent.last_mode_id,
        "labels": "{}",
        "config": "{}",
        "runtime_info": "{}",
        "persistence": "{}",
        "attention_reason": agent.attention_reason or "",
        "version": agent.version,
        # What the browser sends back for a field with a callable default (show_hidden_initial).
        "initial-labels": json.dumps(agent.labels),
    }
    data.update(overrides)
    return data


class TestAgentCreate:
    def test_only_live_workspaces_are_offered(self, admin_client):
        live = WorkspaceFactory(directory="/srv/live")
        archived = WorkspaceFactory(directory="/srv/gone")
        archive_workspace(workspace=archived)
        form = admin_client.get(url("add")).context["adminform"].form
        assert list(form.fields["workspace"].queryset) == [live]

    def test_creates_through_create_agent(self, admin_client, admin_user):
        workspace = WorkspaceFactory()
        response = admin_client.post(
            url("add"),
            add_data(
                workspace,
                agent_id="agent:x.1",
                labels='{"team": "core"}',
                requires_attention="on",
                attention_reason="permission",
            ),
        )
        assert response.status_code == 302, response.context["adminform"].form.errors
        agent = AgentSnapshot.objects.get()
        assert (agent.agent_id, agent.workspace, agent.labels) == ("agent:x.1", workspace, {"team": "core"})
        # the service stamps attention_at when attention is required
        assert agent.requires_attention and agent.attention_at is not None
        assert LogEntry.objects.get(action_flag=ADDITION, object_id="agent:x.1").user == admin_user

    def test_blank_agent_id_is_generated(self, admin_client):
        admin_client.post(url("add"), add_data(WorkspaceFactory()))
        assert len(AgentSnapshot.objects.get().agent_id) == 36

    def test_duplicate_agent_id_is_a_form_error(self, admin_client):
        AgentFactory(agent_id="dup")
        response = admin_client.post(url("add"), add_data(WorkspaceFactory(), agent_id="dup"))
        assert response.status_code == 200
        assert "already exists" in " ".join(response.context["adminform"].form.errors["agent_id"])

    def test_service_validation_errors_show_on_the_form(self, admin_client):
        workspace = WorkspaceFactory()
        response = admin_client.post(url("add"), add_data(workspace, labels='{"n": 1}'))
        assert "Labels map strings to strings." in response.context["adminform"].form.errors["labels"]
        response = admin_client.post(url("add"), add_data(workspace, agent_id="bad id!"))
        assert "agent_id" in response.context["adminform"].form.errors
        assert AgentSnapshot.objects.count() == 0


class TestAgentEdit:
    def test_edit_goes_through_update_agent_and_bumps_the_version(self, admin_client, admin_user):
        agent = AgentFactory(title="old")
        data = change_data(agent, labels='{"team": "infra"}', internal="on", requires_attention="on")
        response = admin_client.post(url("change", agent.pk), data)
        assert response.status_code == 302, response.context["adminform"].form.errors
        agent.refresh_from_db()
        assert (agent.labels, agent.internal, agent.requires_attention, agent.version) == (
            {"team": "infra"},
            True,
            True,
            2,
        )
        entry = LogEntry.objects.get(action_flag=CHANGE, object_id=agent.pk)
        assert entry.user == admin_user and "Labels" in entry.get_change_message()

    def test_the_fields_the_daemon_owns_are_read_only(self, admin_client):
        agent = AgentFactory(title="old", provider="claude", lifecycle="idle")
        page = admin_client.get(url("change", agent.pk)).content.decode()
        for name in ("provider", "title", "lifecycle", "last_mode_id", "config", "runtime_info", "persistence"):
            assert f'name="{name}"' not in page, name
        for name in ("labels", "internal", "requires_attention", "attention_reason"):
            assert f'name="{name}"' in page, name
        assert '<div class="readonly">old</div>' in page
        # a form posting them anyway changes nothing: the daemon's values stay
        response = admin_client.post(url("change", agent.pk), change_data(agent, title="new", lifecycle="running"))
        assert response.status_code == 302
        agent.refresh_from_db()
        assert (agent.title, agent.lifecycle, agent.version) == ("old", "idle", 1)
        # the add page still takes them: an operator creating an agent by hand names them
        add_page = admin_client.get(url("add")).content.decode()
        assert 'name="title"' in add_page and 'name="lifecycle"' in add_page

    def test_a_stale_form_does_not_overwrite_a_newer_snapshot(self, admin_client):
        agent = AgentFactory(labels={"team": "old"})
        stale = change_data(agent, labels='{"team": "from the admin"}')
        update_agent(agent=agent, labels={"team": "from the daemon"})
        response = admin_client.post(url("change", agent.pk), stale)
        assert response.status_code == 200
        assert "version" in " ".join(response.context["adminform"].form.non_field_errors())
        agent.refresh_from_db()
        assert agent.labels == {"team": "from the daemon"}

    def test_archived_agent_is_read_only_except_unarchive(self, admin_client):
        agent = AgentFactory(title="old")
        archive_agent(agent=agent)
        page = admin_client.get(url("change", agent.pk)).content.decode()
        assert 'name="title"' not in page and 'id="unarchive-button"' in page
        assert admin_client.post(url("change", agent.pk), change_data(agent, title="x")).status_code == 403
        response = admin_client.post(url("unarchive", agent.pk), {"confirm": "yes"})
        assert messages_of(response) == ["Unarchived 1 agent; reopened 1 as idle."]
        agent.refresh_from_db()
        assert agent.archived_at is None and agent.lifecycle == "idle"


class TestAgentArchive:
    def test_button_confirmation_counts_running(self, admin_client):
        agent = AgentFactory(lifecycle="running")
        page = admin_client.get(url("archive", agent.pk)).content.decode()
        assert "Archiving agent “" in page and "archives nothing else." in page
        assert "1 agent is running; archiving closes it." in page
        assert "It closes 1 running agent; unarchiving reopens each as it was." in page
        response = admin_client.post(url("archive", agent.pk), {"confirm": "yes"})
        assert messages_of(response) == ["Archived 1 agent; closed 1 running."]
        agent.refresh_from_db()
        assert agent.archived_at is not None and agent.lifecycle == "closed"

    def test_list_action_and_blocked_unarchive(self, admin_client):
        workspace = WorkspaceFactory()
        first, second = AgentFactory(workspace=workspace), AgentFactory(workspace=workspace)
        archive_workspace(workspace=workspace)
        data = {"action": "unarchive_selected", "_selected_action": [first.pk, second.pk], "confirm": "yes"}
        response = admin_client.post(reverse("admin:snapshots_agentsnapshot_changelist") + "?archived=yes", data)
        assert len([m for m in messages_of(response) if "unarchive the workspace instead" in m]) == 2
        assert AgentSnapshot.objects.live().count() == 0

    def test_list_filters_and_search(self, admin_client):
        workspace = WorkspaceFactory(directory="/srv/special")
        AgentFactory(agent_id="needs-me", requires_attention=True, attention_reason="error", provider="codex")
        AgentFactory(agent_id="quiet", workspace=workspace, title="Refactor parser")

        def shown(**params):
            response = admin_client.get(reverse("admin:snapshots_agentsnapshot_changelist"), params)
            return {a.agent_id for a in response.context["cl"].result_list}

        assert shown(requires_attention__exact="1") == {"needs-me"}
        assert shown(provider="codex") == {"needs-me"}
        assert shown(lifecycle__exact="idle") == {"needs-me", "quiet"}
        assert shown(q="parser") == {"quiet"}
        assert shown(q="special") == {"quiet"}
        assert shown(workspace__project__id__exact=workspace.project_id) == {"quiet"}


def test_the_admin_calls_them_agents(admin_client):
    """Next to "Data snapshots", "agent snapshots" read like a kind of snapshot; the admin says "Agents"."""
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert ">Agents</a>" in index and "Agent snapshots" not in index
    changelist = admin_client.get(reverse("admin:snapshots_agentsnapshot_changelist")).content.decode()
    assert "Select agent to change" in changelist


def test_list_and_breadcrumb_show_the_title_and_short_id_with_a_copy_button(admin_client):
    long_id = "3f2a9c1d-5b6e-4f70-8a91-b2c3d4e5f607"
    AgentFactory(agent_id=long_id, title="Fix the build")
    AgentFactory(agent_id="3f2a9c1d-0000-4000-8000-000000000000", title="Fix the build")
    AgentFactory(agent_id="short-one", title="")
    changelist = admin_client.get(url("changelist")).content.decode()
    change = url("change", long_id)
    assert (
        f'<a href="{change}" class="agent-link"><span class="agent-title" title="Fix the build">Fix the build</span> '
        f'<code class="agent-short-id" title="{long_id}">3f2a9c1d</code></a> '
        f'<button type="button" class="copy-button" data-copy="{long_id}"'
    ) in changelist
    assert '<code class="agent-short-id" title="short-one">short-one</code>' in changelist
    assert "(untitled)" in changelist
    page = admin_client.get(change).content.decode()
    crumb = page.split('id="agent-crumb"')[1].split("</span>\n</div>")[0]
    assert "Fix the build" in crumb and ">3f2a9c1d</code>" in crumb and f'data-copy="{long_id}"' in crumb
    assert "chartr/copy.js" in page
    assert str(AgentSnapshot.objects.get(pk=long_id)) == "Fix the build · 3f2a9c1d"
    assert str(AgentSnapshot.objects.get(pk="short-one")) == "short-one"


def test_the_agent_list_shows_and_filters_stale_agents(admin_client, settings):
    settings.CHARTR_STALE_AFTER_SECONDS = 60
    AgentFactory(agent_id="fresh", lifecycle="running")
    AgentSnapshot.objects.filter(pk=AgentFactory(agent_id="gone", lifecycle="running").pk).update(last_seen_at=None)
    changelist = reverse("admin:snapshots_agentsnapshot_changelist")
    shown = admin_client.get(changelist, {"stale": "yes"}).context["cl"].result_list
    assert [agent.agent_id for agent in shown] == ["gone"]
    assert [agent.agent_id for agent in admin_client.get(changelist, {"stale": "no"}).context["cl"].result_list] == [
        "fresh"
    ]
    assert (
        '<td class="field-stale"><span class="stale-label">stale</span></td>'
        in admin_client.get(changelist).content.decode()
    )


def test_the_agent_list_says_how_long_an_agent_has_waited_and_names_its_columns_plainly(admin_client):
    now = timezone.now()
    AgentFactory(
        agent_id="waiting",
        requires_attention=True,
        attention_reason="permission",
        attention_at=now - dt.timedelta(hours=2, minutes=5),
    )
    AgentFactory(agent_id="calm")
    archive_agent(agent=AgentFactory(agent_id="done"))
    page = admin_client.get(url("changelist"), {"archived": "all"}).content.decode()
    headers = re.findall(r'<th scope="col" class="[^"]*column-(\w+)[^"]*">.*?<a [^>]*>([^<]+)</a>', page, re.S)
    named = dict(headers)
    assert named["waiting_since"] == "Waiting since" and named["attention"] == "Needs attention"
    assert named["archived_state"] == "Archived", "the archived column says so, not 'state'"
    row = page.split('data-copy="waiting"')[1].split("</tr>")[0]
    assert '<td class="field-attention"><span class="attention-label">permission</span></td>' in row
    assert re.search(r'<time class="waiting-since" datetime="[^"]+" title="[^"]+">2\xa0hours, 5\xa0minutes</time>', row)
    calm = page.split('data-copy="calm"')[1].split("</tr>")[0]
    assert '<td class="field-attention">-</td>' in calm and '<td class="field-waiting_since">-</td>' in calm
    # sorted by it, the longest waiting first
    ordered = admin_client.get(url("changelist"), {"o": "6"}).context["cl"].result_list
    assert ordered[0].agent_id == "waiting"
