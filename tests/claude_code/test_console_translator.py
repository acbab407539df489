"""The console's reading of Claude Code records (claude_code.console.shown_items)."""

from __future__ import annotations

from claude_code.console import shown_items
from tests.claude_code import home as claude_home


def _by_uuid():
    return {record.get("uuid"): record for record in claude_home.main_session()}


def test_text_thinking_and_prompts_read_as_messages():
    records = _by_uuid()
    assert shown_items(records["u-1"]) == [
        {"type": "user_message", "text": "List the files and tell me what the shop does."}
    ]
    assert shown_items(records["a-1"]) == [{"type": "reasoning", "text": "I should run ls first."}]
    assert shown_items(records["a-4"]) == [
        {"type": "assistant_message", "text": "The shop sells teapots — see shop.py. ☕"}
    ]


def test_a_tool_use_and_its_result_share_the_call_id():
    records = _by_uuid()
    (call,) = shown_items(records["a-2"])
    (result,) = shown_items(records["u-2"])
    assert call == {
        "type": "tool_call",
        "callId": "toolu_01XYZ",
        "name": "Bash",
        "status": "running",
        "input": {"command": "ls -la", "description": "List files"},
    }
    assert result == {
        "type": "tool_call",
        "callId": "toolu_01XYZ",
        "status": "completed",
        "output": "README.md\nshop.py\n",
    }
    (failed,) = shown_items(records["u-3"])
    assert failed["status"] == "failed" and "does not exist" in failed["error"]


def test_a_line_with_several_blocks_reads_as_several_items():
    record = claude_home.user(
        "u-9",
        None,
        [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]},
            {"type": "text", "text": "and now this"},
        ],
    )
    assert shown_items(record) == [
        {"type": "tool_call", "callId": "t1", "status": "completed", "output": "ok"},
        {"type": "user_message", "text": "and now this"},
    ]


def test_records_with_nothing_to_read_show_none():
    records = claude_home.main_session()
    kinds = {record["type"]: shown_items(record) for record in records}
    assert kinds["summary"] == kinds["custom-title"] == kinds["file-history-snapshot"] == []
    assert kinds["system"] == [{"type": "compaction", "status": "completed"}]
    assert shown_items({"type": "assistant", "message": "not an object"}) == []
