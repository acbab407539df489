"""The console's reading of Codex records: a pure function over the fixture's lines, and its registration."""

from __future__ import annotations

import json

from codex.console import shown_items
from tests.codex.builders import LIVE, conversation, line, real_shaped_home, session_meta
from timeline.console.foreign import shown_items as console_items
from timeline.items import foreign_item, item_problems
from timeline.reads.projection import merge_tool_call

TURN = conversation("/home/me/app", day="2025-10-01", prompt="Run the tests")


def shown(kind_or_index) -> list[dict]:
    return shown_items(TURN[kind_or_index])


def test_a_turn_reads_as_a_conversation():
    items = [item for record in TURN for item in shown_items(record)]
    kinds = [(item["type"], item.get("callId", item.get("text", ""))) for item in items]
    assert kinds == [
        ("user_message", "Run the tests"),
        ("reasoning", "**Looking at the tests**"),
        ("tool_call", "call_ok"),
        ("tool_call", "call_ok"),
        ("tool_call", "call_bad"),
        ("tool_call", "call_bad"),
        ("tool_call", "call_patch"),
        ("tool_call", "call_patch"),
        ("tool_call", "call_ls"),
        ("assistant_message", "Done: the tests pass. ✓"),
    ]
    # Every item is one chartr's own checks accept; an output carries no name, so that pairing it with
    # its call (the page merges them by callId) keeps the call's.
    calls = {item["callId"]: item for item in items if item.get("status") == "running"}
    paired = [
        merge_tool_call(calls[item["callId"]], item) if item["type"] == "tool_call" and "name" not in item else item
        for item in items
    ]
    assert all(item_problems(item) == [] for item in paired)
    assert [item["name"] for item in paired if item["type"] == "tool_call"][:4] == ["shell"] * 4


def test_the_context_codex_injects_and_the_ui_events_read_as_nothing():
    assert shown(1) == []  # <environment_context> as a user message
    assert shown(3) == []  # event_msg user_message repeats the user's message
    assert shown(0) == []  # turn_context
    assert shown_items(session_meta(LIVE, "/x", at="2025-10-01T00:00:00Z")) == []
    assert shown(-1) == []  # token_count


def test_a_function_call_pairs_with_its_output_and_the_exit_code_sets_the_status():
    call = shown(5)[0]
    assert call == {
        "type": "tool_call",
        "callId": "call_ok",
        "name": "shell",
        "status": "running",
        "command": ["bash", "-lc", "pytest -q"],
        "cwd": "/home/me/app",
        "input": {"timeout_ms": 120000},
    }
    assert shown(6) == [
        {"type": "tool_call", "callId": "call_ok", "status": "completed", "output": "3 passed", "exitCode": 0}
    ]
    assert shown(8) == [{"type": "tool_call", "callId": "call_bad", "status": "failed", "output": "", "exitCode": 1}]


def test_plain_text_outputs_and_failure_objects():
    patch = shown(10)[0]
    assert (patch["status"], patch["exitCode"]) == ("completed", 0)
    failed = line(
        "t",
        "response_item",
        {"type": "function_call_output", "call_id": "c", "output": "Exit code: 127\nWall time: 0 s\n"},
    )
    assert shown_items(failed)[0]["status"] == "failed"
    refused = line(
        "t",
        "response_item",
        {"type": "function_call_output", "call_id": "c", "output": {"content": "no", "success": False}},
    )
    assert shown_items(refused) == [{"type": "tool_call", "callId": "c", "status": "failed", "output": "no"}]


def test_shell_calls_reasoning_and_compaction():
    assert shown(11) == [
        {
            "type": "tool_call",
            "callId": "call_ls",
            "name": "shell",
            "status": "running",
            "command": ["ls"],
            "cwd": "/home/me/app",
        }
    ]
    assert shown_items(line("t", "compacted", {"message": "Summary so far"})) == [
        {"type": "compaction", "status": "completed", "text": "Summary so far"}
    ]
    no_summary = line("t", "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})
    assert shown_items(no_summary) == []
    assert shown_items(line("t", "event_msg", {"type": "error", "message": "rate limited"})) == [
        {"type": "error", "message": "rate limited"}
    ]


def test_odd_records_read_as_nothing_rather_than_fail():
    for record in [
        {},
        {"type": "response_item"},
        {"type": "response_item", "payload": "x"},
        {"payload": {"type": "message"}},
    ]:
        assert shown_items(record) == []
    assert shown_items(line("t", "response_item", {"type": "message", "role": "user", "content": "not a list"})) == []


def test_the_app_registers_it_for_the_console(tmp_path):
    home = real_shaped_home(tmp_path / "h")
    records = [record for lines in home.files().values() for record in lines]
    for record in records:
        item = json.loads(json.dumps(foreign_item("codex", record, record["type"])))
        assert console_items(item) == shown_items(record)


def test_arguments_that_are_not_a_command_are_the_input():
    call = line(
        "t",
        "response_item",
        {"type": "function_call", "name": "update_plan", "arguments": '{"plan": []}', "call_id": "p"},
    )
    assert shown_items(call)[0]["input"] == {"plan": []}
    raw = line("t", "response_item", {"type": "function_call", "name": "x", "arguments": "not json", "call_id": "q"})
    assert shown_items(raw)[0]["input"] == "not json"
