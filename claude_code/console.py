"""What the console shows for a Claude Code transcript record (``timeline.console.foreign``).

A ``user`` or ``assistant`` line holds one API message, or part of one: its ``message.content`` is a
string or a list of blocks. Each block reads as a chartr item: ``text`` as a user or assistant
message, ``thinking`` as reasoning (``redacted_thinking`` too, without its text), ``tool_use`` as a
running ``tool_call`` and the later ``tool_result`` with the same id as that call's completed (or
failed, ``is_error``) state, so the console pairs them by ``callId``. A ``system`` line reads as a
compaction when it marks one, as an error when its level is ``error``; a line with nothing to read (``summary``,
``custom-title``, ``file-history-snapshot``, ...) shows none, its record still one click away.
"""

from __future__ import annotations

from typing import Any


def shown_items(record: dict) -> list[dict]:
    """The chartr items the console shows for one Claude Code transcript ``record``."""
    kind = record.get("type")
    if kind in ("user", "assistant"):
        message = record.get("message")
        if not isinstance(message, dict):
            return []
        role = "user_message" if kind == "user" else "assistant_message"
        content = message.get("content")
        if isinstance(content, str):
            return [{"type": role, "text": content}] if content else []
        if not isinstance(content, list):
            return []
        return [item for block in content if isinstance(block, dict) for item in _block_items(block, role)]
    if kind == "system":
        return _system_items(record)
    return []


def _block_items(block: dict, role: str) -> list[dict]:
    block_type = block.get("type")
    if block_type == "text":
        text = block.get("text")
        return [{"type": role, "text": text}] if isinstance(text, str) and text else []
    if block_type == "thinking":
        return [{"type": "reasoning", "text": _string(block.get("thinking"))}]
    if block_type == "redacted_thinking":
        return [{"type": "reasoning", "text": "(redacted thinking)"}]
    if block_type == "tool_use":
        return [
            {
                "type": "tool_call",
                "callId": _string(block.get("id")),
                "name": _string(block.get("name")),
                "status": "running",
                "input": block.get("input"),
            }
        ]
    if block_type == "tool_result":
        failed = block.get("is_error") is True
        output = _result_text(block.get("content"))
        item = {
            "type": "tool_call",
            "callId": _string(block.get("tool_use_id")),
            "status": "failed" if failed else "completed",
        }
        if failed:
            item["error"] = output
        else:
            item["output"] = output
        return [item]
    if block_type == "image":
        return [{"type": role, "text": "(image)"}]
    return []


def _result_text(content: Any) -> str:
    """A tool result's content: a string, or a list of blocks whose text parts join."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(_string(block.get("text")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("(image)")
        return "\n".join(parts)
    return "" if content is None else str(content)


def _system_items(record: dict) -> list[dict]:
    if record.get("subtype") == "compact_boundary":
        return [{"type": "compaction", "status": "completed"}]
    text = record.get("content")
    if not isinstance(text, str) or not text:
        return []
    return [{"type": "error", "message": text}] if record.get("level") == "error" else []


def _string(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
