"""``POST /api/v1/claude-code/hooks``: a Claude Code hook event (what ``chartr-claude-hook`` forwards)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from claude_code.api.shapes import Namespace, SessionId
from claude_code.hooks import record_hook_event
from claude_code.keys import DEFAULT_NAMESPACE, check_namespace
from kernel.api.plain import Answer, Operation, json_view
from tokens.access import authorize


class HookQuery(msgspec.Struct, forbid_unknown_fields=True):
    namespace: Namespace = DEFAULT_NAMESPACE


class HookEvent(msgspec.Struct, forbid_unknown_fields=True):
    """The fields of Claude Code's hook input chartr reads (``chartr-claude-hook`` sends only these)."""

    hook_event_name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    session_id: SessionId
    transcript_path: Annotated[
        str,
        msgspec.Meta(
            max_length=4096,
            pattern=r"[^/\\\x00][/\\]+[^/\\\x00]",
            description="`<project directory>/<session id>.jsonl`: the project key is the directory's name.",
        ),
    ]
    cwd: str | None = None
    message: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None


class HookApplied(msgspec.Struct):
    event: str
    #: The session's agent, or null for an event that does nothing.
    agent_id: str | None
    changed: bool


def apply_hook(*, query: HookQuery, body: HookEvent) -> Answer:
    outcome = record_hook_event(namespace=check_namespace(query.namespace), event=msgspec.structs.asdict(body))
    return Answer(HookApplied(event=outcome.event, agent_id=outcome.agent_id, changed=outcome.changed))


hooks = json_view(
    Operation(
        "POST",
        apply_hook,
        operation_id="claude_code_hook",
        summary="Apply a Claude Code hook event to its session's agent (running, attention, idle)",
        description=(
            "`SessionStart` and `UserPromptSubmit` mark the session's agent running, `Notification` and "
            "`PermissionRequest` raise attention (`permission`, the request's text in "
            "`runtime_info.attention_message`), `Stop` marks it idle; other events change nothing. "
            "The agent is made when missing. A repeated event writes nothing."
        ),
        query=HookQuery,
        body=HookEvent,
        responses={200: HookApplied},
        tags=("claude-code",),
    ),
    authorize=authorize,
)
