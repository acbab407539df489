"""Claude Code's hook events on their session's agent (claude_code.hooks): the live fleet view."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from claude_code.hooks import record_hook_event
from claude_code.keys import SessionKey
from dashboard.selectors import dashboard
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent
from tests.claude_code import home as claude_home

pytestmark = pytest.mark.django_db

KEY = SessionKey(claude_home.PROJECT_KEY, claude_home.SESSION_ID)
TRANSCRIPT = f"/home/dev/.claude/projects/{claude_home.PROJECT_KEY}/{claude_home.SESSION_ID}.jsonl"


def hook(name: str, **fields) -> dict:
    """A hook's stdin as Claude Code sends it (code.claude.com/docs/en/hooks, "Hook input")."""
    return {
        "session_id": claude_home.SESSION_ID,
        "transcript_path": TRANSCRIPT,
        "cwd": claude_home.CWD,
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def agent() -> AgentSnapshot:
    return AgentSnapshot.objects.get(pk=KEY.agent_id)


def test_a_session_goes_running_waits_for_permission_and_goes_idle():
    assert record_hook_event(namespace="default", event=hook("SessionStart", source="startup")).changed
    found = agent()
    assert (found.lifecycle, found.requires_attention, found.workspace.directory) == ("running", False, claude_home.CWD)
    record_hook_event(
        namespace="default",
        event=hook(
            "PermissionRequest", tool_name="Bash", tool_input={"command": "rm -rf build", "description": "Clean"}
        ),
    )
    found = agent()
    assert (found.requires_attention, found.attention_reason) == (True, "permission")
    assert found.runtime_info["attention_message"] == "Claude wants to use Bash: rm -rf build"
    assert [a.pk for a in dashboard().attention.longest_waiting] == [KEY.agent_id]
    record_hook_event(namespace="default", event=hook("UserPromptSubmit", prompt="yes, go on"))
    assert (agent().lifecycle, agent().requires_attention, agent().runtime_info) == ("running", False, {})
    record_hook_event(
        namespace="default",
        event=hook("Notification", message="Claude is waiting for your input", notification_type="idle_prompt"),
    )
    assert agent().runtime_info["attention_message"] == "Claude is waiting for your input"
    record_hook_event(namespace="default", event=hook("Stop", stop_hook_active=False))
    found = agent()
    assert (found.lifecycle, found.requires_attention, found.attention_reason) == ("idle", False, None)


def test_a_repeated_event_writes_nothing():
    record_hook_event(namespace="default", event=hook("Notification", message="Permission needed"))
    version = agent().version
    outcome = record_hook_event(namespace="default", event=hook("Notification", message="Permission needed"))
    assert not outcome.changed and agent().version == version


def test_the_hooks_find_the_agent_the_importer_and_the_store_use(tmp_path):
    from claude_code.services import append_entries

    append_entries(KEY, claude_home.main_session())
    outcome = record_hook_event(namespace="default", event=hook("Stop"))
    assert outcome.agent_id == KEY.agent_id and AgentSnapshot.objects.count() == 1


def test_other_events_and_archived_agents_change_nothing():
    assert record_hook_event(namespace="default", event=hook("PreToolUse", tool_name="Bash")).agent_id is None
    assert not AgentSnapshot.objects.exists()
    record_hook_event(namespace="default", event=hook("SessionStart"))
    archive_agent(agent=agent())
    version = agent().version
    assert not record_hook_event(namespace="default", event=hook("Notification", message="x")).changed
    assert agent().version == version


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"hook_event_name": "Stop", "session_id": "s"}, "transcript_path"),
        ({"hook_event_name": "Stop", "session_id": "s", "transcript_path": "s.jsonl"}, "transcript_path"),
        ({"hook_event_name": "Stop", "transcript_path": TRANSCRIPT}, "session_id"),
        ({"session_id": "s", "transcript_path": TRANSCRIPT}, "hook_event_name"),
    ],
)
def test_bad_hook_input_names_the_field(event, field):
    with pytest.raises(ValidationError) as caught:
        record_hook_event(namespace="default", event=event)
    assert field in caught.value.message_dict


def test_the_dashboards_attention_list_shows_what_the_session_waits_for(staff_client):
    record_hook_event(namespace="default", event=hook("SessionStart"))
    record_hook_event(
        namespace="default",
        event=hook("PermissionRequest", tool_name="Edit", tool_input={"file_path": "/srv/a <b>.py"}),
    )
    page = staff_client("snapshots.view_agentsnapshot").get("/admin/").content.decode()
    assert f'data-agent="{KEY.agent_id}"' in page
    assert "Claude wants to use Edit: /srv/a &lt;b&gt;.py" in page
