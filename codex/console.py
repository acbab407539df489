"""What the console shows for a Codex rollout line (``timeline.console.foreign``).

A line is ``{"timestamp", "type", "payload"}``. The conversation is in its ``response_item`` lines
(``codex-rs/protocol/src/models.rs``, ``ResponseItem``): a ``message`` reads as a user or assistant
message (``input_text`` / ``output_text`` parts; the context Codex injects as user messages, such as
``<environment_context>``, reads as nothing), ``reasoning`` as its summary, and each tool call
(``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) as a running
``tool_call`` whose later output (``function_call_output``, ``custom_tool_call_output``, same
``call_id``) is its completed or failed state: failed when the output reports a non-zero exit code
or ``success: false``. ``event_msg`` lines repeat the conversation for Codex's own UI and read as
nothing, except errors; ``compacted`` reads as a compaction. Every other line (``session_meta``,
``turn_context``, ``rollout_reference``, ...) shows none, its record still one click away.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: User messages Codex writes itself to give the model context, not what the user typed.
_INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>")
_EXIT_CODE = re.compile(r"^(?:Exit code|Process exited with code):? (-?\d+)", re.MULTILINE)


def shown_items(record: dict) -> list[dict]:
    """The chartr items the console shows for one Codex rollout ``record``."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return []
    kind = record.get("type")
    if kind == "response_item":
        return _response_item(payload)
    if kind == "event_msg":
        return _event(payload)
    if kind == "compacted":
        return [{"type": "compaction", "status": "completed", "text": _string(payload.get("message"))}]
    return []


def _response_item(payload: dict) -> list[dict]:
    kind = payload.get("type")
    if kind == "message":
        return _message(payload)
    if kind == "reasoning":
        return _reasoning(payload)
    if kind == "function_call":
        return [_call(payload, name=_string(payload.get("name")), **_arguments(payload.get("arguments")))]
    if kind == "custom_tool_call":
        return [_call(payload, name=_string(payload.get("name")), input=_maybe_json(payload.get("input")))]
    if kind == "local_shell_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        return [_call(payload, name="shell", command=action.get("command"), cwd=action.get("working_directory"))]
    if kind == "web_search_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        status = "completed" if payload.get("status") in (None, "completed") else "running"
        return [_call(payload, name="web_search", status=status, query=action.get("query"))]
    if kind in ("function_call_output", "custom_tool_call_output"):
        return [_output(payload)]
    return []


def _message(payload: dict) -> list[dict]:
    role = payload.get("role")
    if role not in ("user", "assistant"):
        return []
    parts = []
    for part in payload.get("content") if isinstance(payload.get("content"), list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("input_text", "output_text") and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif part.get("type") == "input_image":
            parts.append("(image)")
    text = "\n".join(parts)
    if not text or (role == "user" and text.lstrip().startswith(_INJECTED_PREFIXES)):
        return []
    return [{"type": "user_message" if role == "user" else "assistant_message", "text": text}]


def _reasoning(payload: dict) -> list[dict]:
    summary = payload.get("summary") if isinstance(payload.get("summary"), list) else []
    texts = [part["text"] for part in summary if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return [{"type": "reasoning", "text": "\n\n".join(texts)}] if texts else []


def _arguments(arguments: Any) -> dict[str, Any]:
    """A function call's arguments (a JSON string): a shell command's ``command`` and ``workdir`` shown
    as the command and its directory, anything else as the input."""
    parsed = _maybe_json(arguments)
    if not isinstance(parsed, dict) or "command" not in parsed:
        return {"input": parsed}
    rest = {key: value for key, value in parsed.items() if key not in ("command", "workdir")}
    return {"command": parsed["command"], "cwd": parsed.get("workdir"), "input": rest or None}


def _call(payload: dict, *, name: str, status: str = "running", **values: Any) -> dict:
    item = {"type": "tool_call", "callId": _string(payload.get("call_id")), "name": name, "status": status}
    item.update((key, value) for key, value in values.items() if value is not None)
    return item


def _output(payload: dict) -> dict:
    text, exit_code, success = _output_parts(payload.get("output"))
    failed = success is False or (exit_code is not None and exit_code != 0)
    item: dict[str, Any] = {
        "type": "tool_call",
        "callId": _string(payload.get("call_id")),
        "status": "failed" if failed else "completed",
        "output": text,
    }
    if exit_code is not None:
        item["exitCode"] = exit_code
    return item


def _output_parts(output: Any) -> tuple[str, int | None, bool | None]:
    """An output's text, exit code and success flag, from the shapes Codex writes: a string (plain
    text, or the JSON ``{"output", "metadata": {"exit_code"}}`` of its shell tool), a list of
    content items, or an object with ``content`` and ``success``."""
    success = None
    if isinstance(output, dict):
        success = output.get("success") if isinstance(output.get("success"), bool) else None
        output = output.get("content", "")
    if isinstance(output, list):
        output = "\n".join(
            _string(part.get("text")) if part.get("type") != "input_image" else "(image)"
            for part in output
            if isinstance(part, dict)
        )
    text = _string(output)
    shaped = _maybe_json(text)
    if isinstance(shaped, dict) and "output" in shaped:
        metadata = shaped.get("metadata") if isinstance(shaped.get("metadata"), dict) else {}
        code = metadata.get("exit_code")
        return _string(shaped.get("output")), code if isinstance(code, int) else None, success
    found = _EXIT_CODE.search(text[:200])
    return text, int(found.group(1)) if found else None, success


def _event(payload: dict) -> list[dict]:
    kind = payload.get("type")
    if kind in ("error", "stream_error"):
        return [{"type": "error", "message": _string(payload.get("message"))}]
    return []


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _string(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
