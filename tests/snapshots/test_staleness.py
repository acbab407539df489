"""Stale agents: computed at read time, cleared by any sign of life, closed out by mark_stale_agents."""

from __future__ import annotations

import datetime as dt
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from registry.services import archive_workspace
from snapshots.models import AgentSnapshot
from snapshots.selectors import stale_agents
from snapshots.services import mark_stale_agents, record_heartbeat, update_agent
from snapshots.signals import agents_changed
from tests.factories import AgentFactory
from tests.support.api import assert_error
from timeline.models import TimelineHead

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def stale_after_60_seconds(settings):
    settings.CHARTR_STALE_AFTER_SECONDS = 60


def silent_for(agent: AgentSnapshot, seconds: int) -> AgentSnapshot:
    AgentSnapshot.objects.filter(pk=agent.pk).update(last_seen_at=timezone.now() - dt.timedelta(seconds=seconds))
    return AgentSnapshot.objects.get(pk=agent.pk)


def stale_flags(api) -> dict[str, bool]:
    response = api.get("/api/v1/agents")
    assert response.status_code == 200
    return {row["agent_id"]: row["stale"] for row in response.json()["results"]}


def test_only_silent_running_or_initializing_agents_are_stale(api):
    silent_for(AgentFactory(agent_id="running-silent", lifecycle="running"), 61)
    silent_for(AgentFactory(agent_id="initializing-silent", lifecycle="initializing"), 61)
    silent_for(AgentFactory(agent_id="idle-silent", lifecycle="idle"), 3600)
    silent_for(AgentFactory(agent_id="running-recent", lifecycle="running"), 30)
    assert stale_flags(api) == {
        "running-silent": True,
        "initializing-silent": True,
        "idle-silent": False,
        "running-recent": False,
    }
    listed = api.get("/api/v1/agents?stale=true").json()["results"]
    assert sorted(row["agent_id"] for row in listed) == ["initializing-silent", "running-silent"]
    assert len(api.get("/api/v1/agents?stale=false").json()["results"]) == 2
    assert_error(api.get("/api/v1/agents?stale=yes"), 400, "invalid", fields=["stale"])


def test_an_agent_never_heard_from_is_stale_at_once_when_it_claims_to_run():
    agent = AgentFactory(lifecycle="running")
    AgentSnapshot.objects.filter(pk=agent.pk).update(last_seen_at=None)
    assert list(stale_agents()) == [AgentSnapshot.objects.get(pk=agent.pk)]


def test_a_heartbeat_clears_staleness_without_changing_the_version(api):
    agent = silent_for(AgentFactory(agent_id="a1", lifecycle="running"), 120)
    etag = api.get("/api/v1/agents/a1")["ETag"]
    response = api.post("/api/v1/agents/a1/heartbeat")
    assert response.status_code == 204 and response.content == b""
    assert stale_flags(api) == {"a1": False}
    assert api.get("/api/v1/agents/a1")["ETag"] == etag
    assert TimelineHead.objects.get(pk=agent.pk).head_seq == 0


def test_an_update_clears_staleness():
    agent = silent_for(AgentFactory(lifecycle="running"), 120)
    update_agent(agent=agent, title="still here")
    assert not stale_agents().exists()


def test_heartbeat_refusals(api, read_only_api):
    AgentFactory(agent_id="a1", lifecycle="running")
    assert read_only_api.post("/api/v1/agents/a1/heartbeat").status_code == 403
    assert_error(api.post("/api/v1/agents/missing/heartbeat"), 404, "not_found")
    assert_error(api.post("/api/v1/agents/a1/heartbeat", {"alive": True}, format="json"), 400, "invalid")


def test_a_heartbeat_for_an_archived_agent_is_a_conflict(api):
    agent = AgentFactory(agent_id="a1")
    archive_workspace(workspace=agent.workspace)
    assert_error(api.post("/api/v1/agents/a1/heartbeat"), 409, "archived")
    with pytest.raises(Exception, match="archived"):
        record_heartbeat(agent_id="a1")


def test_archiving_a_stale_agent_works_and_it_stops_being_stale(api):
    silent_for(AgentFactory(agent_id="a1", lifecycle="running"), 120)
    response = api.post("/api/v1/agents/a1/archive")
    assert response.status_code == 200
    assert response.json()["agent"]["stale"] is False
    assert not stale_agents().exists()


class TestMarkStaleAgents:
    def test_marks_stale_agents_as_errors_needing_attention_and_announces_them(
        self, django_capture_on_commit_callbacks
    ):
        stale = silent_for(AgentFactory(agent_id="gone", lifecycle="running"), 120)
        silent_for(AgentFactory(agent_id="alive", lifecycle="running"), 10)
        events = []
        agents_changed.connect(receiver := lambda sender, **kw: events.append(kw), weak=False)
        try:
            with django_capture_on_commit_callbacks(execute=True):
                assert mark_stale_agents() == ["gone"]
        finally:
            agents_changed.disconnect(receiver)
        gone = AgentSnapshot.objects.get(pk="gone")
        assert (gone.lifecycle, gone.requires_attention, gone.attention_reason) == ("error", True, "error")
        assert gone.version == stale.version + 1
        assert AgentSnapshot.objects.get(pk="alive").lifecycle == "running"
        assert events == [{"agent_ids": ["gone"], "reason": "stale", "signal": agents_changed}]
        assert mark_stale_agents() == [], "marking twice changes nothing more"

    def test_command_dry_run_reports_and_changes_nothing(self):
        silent_for(AgentFactory(agent_id="gone", lifecycle="running"), 120)
        out = StringIO()
        call_command("mark_stale_agents", "--dry-run", stdout=out)
        assert "would mark 1 stale agent(s)" in out.getvalue() and "  gone" in out.getvalue()
        assert AgentSnapshot.objects.get(pk="gone").lifecycle == "running"

        out = StringIO()
        call_command("mark_stale_agents", stdout=out)
        assert out.getvalue().startswith("marked 1 stale agent(s)")
        assert AgentSnapshot.objects.get(pk="gone").lifecycle == "error"


def test_a_running_agent_turns_stale_after_the_configured_silence_and_an_append_clears_it(api, settings):
    """The issue's own scenario, in real time: stale after 2 s of silence, fresh again on an append."""
    settings.CHARTR_STALE_AFTER_SECONDS = 2
    AgentFactory(agent_id="a1", lifecycle="running")
    assert stale_flags(api) == {"a1": False}
    time.sleep(3)
    assert [row["agent_id"] for row in api.get("/api/v1/agents?stale=true").json()["results"]] == ["a1"]
    item = {"type": "assistant_message", "text": "still working"}
    assert api.post("/api/v1/agents/a1/timeline", {"items": [{"item": item}]}, format="json").status_code == 201
    assert stale_flags(api) == {"a1": False}
    time.sleep(3)
    assert stale_flags(api) == {"a1": True}
    assert api.post("/api/v1/agents/a1/heartbeat").status_code == 204
    assert stale_flags(api) == {"a1": False}
