"""What a Claude Code hook event does to its session's agent: the live fleet view.

Claude Code runs a hook command with the event as JSON on stdin (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name`` and the event's own fields: a ``Notification``'s ``message``, a
``PermissionRequest``'s ``tool_name`` and ``tool_input``). ``chartr-claude-hook`` forwards it here.
The session key is the SDK's: ``project_key`` = the transcript's directory name, ``session_id`` as
given, in the caller's namespace; the agent is the one the store and the importer use
(``claude_code.services.ensure_session``, made when missing).

- ``SessionStart``, ``UserPromptSubmit``: the agent is ``running`` and needs no attention;
- ``Notification``, ``PermissionRequest``: it needs attention (``permission``), the request's text
  in ``runtime_info["attention_message"]``;
- ``Stop``: it is ``idle`` and needs no attention.

Any other event changes nothing. An event that finds the agent as it would leave it writes nothing
(no new version, no event), so a repeated hook is harmless; an archived agent is left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from claude_code.keys import SessionKey
from claude_code.services import ensure_session, usable_cwd
from snapshots.models import AgentSnapshot
from snapshots.services import update_agent

RUNNING_EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})
ATTENTION_EVENTS = frozenset({"Notification", "PermissionRequest"})
IDLE_EVENTS = frozenset({"Stop"})
HANDLED_EVENTS = RUNNING_EVENTS | ATTENTION_EVENTS | IDLE_EVENTS
ATTENTION_MESSAGE = "attention_message"
MAX_MESSAGE_LENGTH = 500
#: A tool's input values that say best what a permission request is for, the first present.
TOOL_INPUT_PREVIEW = ("command", "file_path", "url", "pattern", "query", "description", "prompt")


@dataclass(frozen=True)
class HookOutcome:
    event: str
    #: None for an event that does nothing here
    agent_id: str | None = None
    changed: bool = False


def project_key_of(transcript_path: object) -> str:
    """The SDK's project key of a transcript: the name of the directory holding it."""
    if not isinstance(transcript_path, str) or not transcript_path:
        raise ValidationError({"transcript_path": ["Must be the session's transcript path."]}, code="invalid")
    parts = [part for part in transcript_path.replace("\\", "/").split("/") if part]
    if len(parts) < 2:
        raise ValidationError({"transcript_path": ["Must be <project directory>/<session>.jsonl."]}, code="invalid")
    return parts[-2]


def record_hook_event(*, namespace: str, event: dict[str, Any]) -> HookOutcome:
    """Apply one hook ``event`` (Claude Code's hook input) to its session's agent."""
    name = event.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise ValidationError({"hook_event_name": ["Must be the hook's event name."]}, code="invalid")
    key = SessionKey.checked(
        project_key=project_key_of(event.get("transcript_path")),
        session_id=event.get("session_id"),
        namespace=namespace,
    )
    if name not in HANDLED_EVENTS:
        return HookOutcome(event=name)
    agent = ensure_session(key, cwd=usable_cwd(event.get("cwd"))).agent
    changes = _changes(name, event, agent)
    if not changes or agent.is_archived:
        return HookOutcome(event=name, agent_id=agent.agent_id)
    update_agent(agent=agent, **changes)
    return HookOutcome(event=name, agent_id=agent.agent_id, changed=True)


def _changes(name: str, event: dict, agent: AgentSnapshot) -> dict[str, Any]:
    """The agent's fields this event sets, only those that differ."""
    info = dict(agent.runtime_info or {})
    if name in ATTENTION_EVENTS:
        info[ATTENTION_MESSAGE] = request_text(event)
        wanted = {"requires_attention": True, "attention_reason": AgentSnapshot.AttentionReason.PERMISSION}
    else:
        info.pop(ATTENTION_MESSAGE, None)
        lifecycle = AgentSnapshot.Lifecycle.RUNNING if name in RUNNING_EVENTS else AgentSnapshot.Lifecycle.IDLE
        wanted = {"lifecycle": lifecycle, "requires_attention": False}
    wanted["runtime_info"] = info
    return {field: value for field, value in wanted.items() if getattr(agent, field) != value}


def request_text(event: dict) -> str:
    """What the session waits for, in words: a notification's message, or the tool asking permission."""
    message = event.get("message")
    if isinstance(message, str) and message:
        return message[:MAX_MESSAGE_LENGTH]
    tool = event.get("tool_name")
    if not isinstance(tool, str) or not tool:
        return "Claude Code needs your attention"
    tool_input = event.get("tool_input")
    preview = ""
    if isinstance(tool_input, dict):
        preview = next((str(tool_input[k]) for k in TOOL_INPUT_PREVIEW if tool_input.get(k) not in (None, "")), "")
        preview = preview or json.dumps(tool_input, ensure_ascii=False)
    text = f"Claude wants to use {tool}" + (f": {preview}" if preview else "")
    return text[:MAX_MESSAGE_LENGTH]
