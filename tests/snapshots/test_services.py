from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from kernel.errors import ArchivedConflict, Conflict, VersionMismatch
from registry.services import archive_workspace
from snapshots import services
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


class TestCreateAgent:
    def test_generates_a_uuid_when_no_id_is_given(self):
        agent = services.create_agent(workspace=WorkspaceFactory(), provider="codex")
        assert len(agent.agent_id) == 36
        assert agent.lifecycle == "initializing" and agent.version == 1

    @pytest.mark.parametrize("agent_id", ["has space", "x" * 129, "slash/no", "ünicode", "trailing-newline\n"])
    def test_rejects_bad_ids(self, agent_id):
        with pytest.raises(ValidationError):
            services.create_agent(workspace=WorkspaceFactory(), provider="p", agent_id=agent_id)
        assert not AgentSnapshot.objects.exists()

    def test_accepts_every_allowed_character(self):
        agent = services.create_agent(workspace=WorkspaceFactory(), provider="p", agent_id="A-z_0.9:x")
        assert AgentSnapshot.objects.get(pk="A-z_0.9:x") == agent

    def test_duplicate_id_is_a_conflict(self):
        agent = AgentFactory()
        with pytest.raises(Conflict):
            services.create_agent(workspace=WorkspaceFactory(), provider="p", agent_id=agent.agent_id)

    def test_archived_workspace_is_refused(self):
        workspace = WorkspaceFactory()
        archive_workspace(workspace=workspace)
        with pytest.raises(ArchivedConflict):
            services.create_agent(workspace=workspace, provider="p")
        assert not AgentSnapshot.objects.exists()

    def test_labels_must_map_strings_to_strings(self):
        with pytest.raises(ValidationError) as exc:
            services.create_agent(workspace=WorkspaceFactory(), provider="p", labels={"a": 1})
        assert "labels" in exc.value.message_dict

    def test_attention_may_come_without_a_reason_but_not_a_reason_without_attention(self):
        # Paseo's schema accepts attention without a reason, so chartr stores it.
        bare = services.create_agent(workspace=WorkspaceFactory(), provider="p", requires_attention=True)
        assert (bare.requires_attention, bare.attention_reason) == (True, None) and bare.attention_at is not None
        with pytest.raises(IntegrityError), transaction.atomic():
            AgentSnapshot.objects.filter(pk=bare.pk).update(requires_attention=False, attention_reason="error")
        agent = services.create_agent(
            workspace=WorkspaceFactory(), provider="p", requires_attention=True, attention_reason="permission"
        )
        assert agent.attention_at is not None


class TestUpdateAgent:
    def test_every_change_bumps_the_version(self):
        agent = AgentFactory()
        updated = services.update_agent(agent=agent, title="first", lifecycle="running")
        assert (updated.version, updated.title, updated.lifecycle) == (2, "first", "running")
        again = services.update_agent(agent=updated, expected_version=2, title="second")
        assert again.version == 3

    def test_stale_version_is_refused_and_nothing_changes(self):
        agent = AgentFactory()
        services.update_agent(agent=agent, title="moved on")
        with pytest.raises(VersionMismatch) as exc:
            services.update_agent(agent=agent, expected_version=1, title="lost update")
        assert exc.value.code == "version_mismatch" and exc.value.extra["version"] == 2
        agent.refresh_from_db()
        assert agent.title == "moved on"

    def test_clearing_attention_clears_the_reason(self):
        agent = AgentFactory()
        agent = services.update_agent(agent=agent, requires_attention=True, attention_reason="finished")
        agent = services.update_agent(agent=agent, requires_attention=False)
        assert agent.attention_reason is None and agent.attention_at is None

    def test_raising_attention_again_stamps_a_new_time(self):
        agent = AgentFactory()
        first = services.update_agent(agent=agent, requires_attention=True, attention_reason="finished").attention_at
        services.update_agent(agent=agent, requires_attention=False)
        again = services.update_agent(agent=agent, requires_attention=True, attention_reason="error").attention_at
        assert first is not None and again > first

    def test_identity_fields_cannot_be_changed(self):
        with pytest.raises(ValidationError):
            services.update_agent(agent=AgentFactory(), workspace_id=1)

    def test_an_archived_agent_stays_archived(self):
        agent = AgentFactory()
        services.archive_agent(agent=agent)
        with pytest.raises(ArchivedConflict):
            services.update_agent(agent=agent, lifecycle="running")
        agent.refresh_from_db()
        assert agent.archived_at is not None and agent.lifecycle == "closed"


class TestArchiveAgent:
    def test_running_agent_is_archived_and_closed(self):
        agent = AgentFactory(lifecycle="running")
        result = services.archive_agent(agent=agent)
        assert (result.agents, result.closed_agents) == (1, {"running": 1})
        agent.refresh_from_db()
        assert agent.lifecycle == "closed" and agent.archived_at is not None

    def test_idempotent(self):
        agent = AgentFactory()
        assert services.archive_agent(agent=agent).changed
        assert not services.archive_agent(agent=agent).changed
        assert services.unarchive_agent(agent=agent).changed
        assert not services.unarchive_agent(agent=agent).changed

    def test_unarchive_in_archived_workspace_is_refused(self):
        agent = AgentFactory()
        archive_workspace(workspace=agent.workspace)
        with pytest.raises(ArchivedConflict):
            services.unarchive_agent(agent=agent)

    def test_signal_fires_after_commit(self, django_capture_on_commit_callbacks):
        from snapshots.signals import agents_changed

        seen = []
        agents_changed.connect(lambda **kw: seen.append((kw["agent_ids"], kw["reason"])), weak=False, dispatch_uid="t")
        try:
            agent = AgentFactory()
            with django_capture_on_commit_callbacks(execute=True):
                services.archive_agent(agent=agent)
        finally:
            agents_changed.disconnect(dispatch_uid="t")
        assert ([agent.agent_id], "archived") in seen
