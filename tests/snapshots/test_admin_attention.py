"""Clearing attention: the service, the agent page's button and the list action."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse
from django.utils import timezone

from kernel.errors import ArchivedConflict
from snapshots.services import archive_agent, clear_attention
from snapshots.signals import agents_changed
from tests.factories import AgentFactory
from tests.support.admin import messages_of

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"admin:snapshots_agentsnapshot_{name}", args=args)


def waiting_agent(agent_id: str = "waiting", reason: str | None = "permission"):
    return AgentFactory(
        agent_id=agent_id,
        requires_attention=True,
        attention_reason=reason,
        attention_at=timezone.now() - dt.timedelta(hours=3),
    )


@pytest.fixture
def events():
    heard: list[dict] = []

    def receiver(sender, **kwargs):
        heard.append({"agent_ids": kwargs["agent_ids"], "reason": kwargs["reason"]})

    agents_changed.connect(receiver, weak=False, dispatch_uid="test-clear-attention")
    yield heard
    agents_changed.disconnect(dispatch_uid="test-clear-attention")


class TestService:
    def test_clears_through_the_update_and_announces_it_once(self, events, django_capture_on_commit_callbacks):
        agent = waiting_agent()
        since = agent.attention_at
        with django_capture_on_commit_callbacks(execute=True):
            result = clear_attention(agent=agent)
        agent.refresh_from_db()
        assert (result.changed, result.reason, result.since) == (True, "permission", since)
        assert (agent.requires_attention, agent.attention_reason, agent.attention_at) == (False, None, None)
        assert agent.version == 2 and agent.lifecycle == "idle"
        assert events == [{"agent_ids": ["waiting"], "reason": "updated"}]

        # again: nothing changes, no new version, no event
        with django_capture_on_commit_callbacks(execute=True):
            again = clear_attention(agent=agent)
        agent.refresh_from_db()
        assert not again.changed and agent.version == 2
        assert len(events) == 1

    def test_an_archived_agent_is_refused(self):
        agent = waiting_agent()
        archive_agent(agent=agent)
        with pytest.raises(ArchivedConflict):
            clear_attention(agent=agent)


class TestButton:
    def test_the_button_confirms_then_clears_and_logs(self, admin_client, admin_user):
        agent = waiting_agent()
        page = admin_client.get(url("change", agent.pk)).content.decode()
        assert f'href="{url("clear_attention", agent.pk)}"' in page

        confirmation = admin_client.get(url("clear_attention", agent.pk))
        assert confirmation.status_code == 200
        text = confirmation.content.decode()
        assert "Clear attention on 1 agent?" in text
        assert "it now needs attention for permission since " in text and "(3\xa0hours ago)" in text
        assert "its reason and time are emptied" in text and 'id="confirm-button"' in text
        agent.refresh_from_db()
        assert agent.requires_attention, "the confirmation page changes nothing"

        response = admin_client.post(url("clear_attention", agent.pk), {"confirm": "yes"})
        assert response.status_code == 302 and response.url == url("change", agent.pk)
        agent.refresh_from_db()
        assert not agent.requires_attention and agent.attention_reason is None and agent.version == 2
        entry = LogEntry.objects.get(object_id=agent.pk)
        assert (entry.user, entry.action_flag) == (admin_user, CHANGE)
        assert entry.change_message.startswith("Cleared attention (it needed attention for permission since ")
        assert messages_of(admin_client.get(response.url)) == ["Cleared attention on 1 agent."]

    def test_clearing_twice_is_a_no_op(self, admin_client):
        agent = waiting_agent()
        first = admin_client.post(url("clear_attention", agent.pk), {"confirm": "yes"}, follow=True)
        assert messages_of(first) == ["Cleared attention on 1 agent."]
        response = admin_client.post(url("clear_attention", agent.pk), {"confirm": "yes"}, follow=True)
        agent.refresh_from_db()
        assert agent.version == 2 and LogEntry.objects.filter(object_id=agent.pk).count() == 1
        assert messages_of(response) == ["1 agent needed no attention; left unchanged."]
        page = admin_client.get(url("clear_attention", agent.pk)).content.decode()
        assert "No attention to clear" in page and 'id="confirm-button"' not in page
        assert 'id="clear-attention-button"' not in admin_client.get(url("change", agent.pk)).content.decode()

    def test_archived_agents_have_no_button_and_are_left_alone(self, admin_client):
        agent = waiting_agent()
        archive_agent(agent=agent)
        assert 'id="clear-attention-button"' not in admin_client.get(url("change", agent.pk)).content.decode()
        page = admin_client.get(url("clear_attention", agent.pk)).content.decode()
        assert "archived; left unchanged" in page and 'id="confirm-button"' not in page

    def test_needs_the_change_permission(self, client, django_user_model):
        viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
        viewer.user_permissions.add(*_permissions("view_agentsnapshot"))
        client.force_login(viewer)
        agent = waiting_agent()
        assert 'id="clear-attention-button"' not in client.get(url("change", agent.pk)).content.decode()
        assert client.post(url("clear_attention", agent.pk), {"confirm": "yes"}).status_code == 403
        agent.refresh_from_db()
        assert agent.requires_attention


def _permissions(*codenames):
    from django.contrib.auth.models import Permission

    return Permission.objects.filter(content_type__app_label="snapshots", codename__in=codenames)


def test_the_list_action_confirms_then_counts(admin_client):
    waiting_agent("a"), waiting_agent("b", reason=None), AgentFactory(agent_id="calm")
    selected = {"action": "clear_attention_selected", "_selected_action": ["a", "b", "calm"]}
    confirmation = admin_client.post(url("changelist"), selected).content.decode()
    assert "Clear attention on 2 agents?" in confirmation
    assert "needs attention for no reason given since " in confirmation
    assert "needs no attention; left unchanged" in confirmation
    response = admin_client.post(url("changelist"), {**selected, "confirm": "yes"}, follow=True)
    assert messages_of(response) == ["Cleared attention on 2 agents.", "1 agent needed no attention; left unchanged."]
    assert LogEntry.objects.filter(object_id__in=["a", "b"]).count() == 2
