"""The projected view's folding rules, restated from Paseo's tests of ``projectTimelineRows``
(agent-timeline-store.test.ts, session-storage/projected-timeline.test.ts) over Paseo-shaped rows."""

from __future__ import annotations

import datetime as dt

from timeline.reads.projection import merge_ranges, merge_tool_call, project_rows

T0 = dt.datetime(2026, 9, 11, tzinfo=dt.UTC)


def row(seq: int, item: dict, *, turn: str | None = "turn") -> dict:
    return {
        "seq": seq,
        "committed_at": T0 + dt.timedelta(seconds=seq),
        "item_type": item["type"],
        "item": item,
        "item_id": f"id-{seq}",
        "turn_id": turn,
    }


def message(seq: int, text: str | None = None, message_id: str | None = "auto", **kw) -> dict:
    item = {"type": "assistant_message", "text": str(seq) if text is None else text}
    if message_id:
        item["messageId"] = str(seq) if message_id == "auto" else message_id
    return row(seq, item, **kw)


def tool(seq: int, call_id: str, status: str, **kw) -> dict:
    item = {
        "type": "tool_call",
        "callId": call_id,
        "name": "shell",
        "status": status,
        "detail": {"type": "unknown", "input": {}, "output": None},
        "error": None,
    }
    return row(seq, item, **kw)


def shape(entries):
    return [(e["seq_start"], e["seq_end"], e["source_seq_ranges"], e["item_type"]) for e in entries]


def test_golden_projection_with_chunk_merges_overlapping_tools_and_call_ids_repeated_across_turns():
    rows = [
        message(1),
        tool(2, "first", "running"),
        message(3),
        message(4, "chunk", message_id=None),
        tool(5, "second", "running"),
        message(6),
        tool(7, "first", "completed"),
        message(8),
        tool(9, "second", "completed"),
        row(10, {"type": "reasoning", "text": "a"}),
        row(11, {"type": "reasoning", "text": "b"}),
        message(12),
        tool(13, "first", "running", turn="other"),
        tool(14, "first", "completed", turn="other"),
    ]
    entries = project_rows(rows)
    assert shape(entries) == [
        (1, 1, [[1, 1]], "assistant_message"),
        (2, 7, [[2, 2], [7, 7]], "tool_call"),
        (3, 4, [[3, 4]], "assistant_message"),
        (5, 9, [[5, 5], [9, 9]], "tool_call"),
        (6, 6, [[6, 6]], "assistant_message"),
        (8, 8, [[8, 8]], "assistant_message"),
        (10, 11, [[10, 11]], "reasoning"),
        (12, 12, [[12, 12]], "assistant_message"),
        (13, 14, [[13, 14]], "tool_call"),
    ]
    by_start = {e["seq_start"]: e for e in entries}
    # A chunk without messageId continues the one before it and keeps its messageId.
    assert by_start[3]["item"] == {"type": "assistant_message", "text": "3chunk", "messageId": "3"}
    assert by_start[2]["item"]["status"] == "completed" and by_start[2]["collapsed"] == ["tool_lifecycle"]
    assert by_start[2]["committed_at"] == rows[6]["committed_at"], "a folded entry has its latest row's time"
    assert by_start[2]["item_ids"] == ["id-2", "id-7"]
    assert by_start[10]["item"] == {"type": "reasoning", "text": "ab"} and by_start[10]["collapsed"] == [
        "reasoning_merge"
    ]
    assert by_start[13]["turn_id"] == "other"


def test_a_streaming_assistant_message_stays_whole_when_a_steering_prompt_is_recorded_mid_stream():
    rows = [
        message(1, "with the uncommit", message_id="msg-1", turn=None),
        row(2, {"type": "user_message", "text": "keep going"}, turn=None),
        message(3, "ted changes.", message_id="msg-1", turn=None),
    ]
    entries = project_rows(rows)
    assert [e["item"] for e in entries] == [
        {"type": "assistant_message", "text": "with the uncommitted changes.", "messageId": "msg-1"},
        {"type": "user_message", "text": "keep going"},
    ]
    assert entries[0]["source_seq_ranges"] == [[1, 1], [3, 3]] and entries[0]["seq_end"] == 3


def test_chunks_of_one_message_id_join_and_different_messages_never_do():
    rows = [
        message(1, "First", message_id="first"),
        message(2, "Sec", message_id="second"),
        message(3, "ond", message_id="second"),
    ]
    assert [e["item"]["text"] for e in project_rows(rows)] == ["First", "Second"]


def test_adjacent_chunks_without_message_id_join_and_a_named_chunk_after_them_does_not():
    rows = [message(1, "A", message_id=None), message(2, "B", message_id=None), message(3, "C", message_id="c")]
    entries = project_rows(rows)
    assert [(e["item"], e["source_seq_ranges"]) for e in entries] == [
        ({"type": "assistant_message", "text": "AB"}, [[1, 2]]),
        ({"type": "assistant_message", "text": "C", "messageId": "c"}, [[3, 3]]),
    ]


def test_the_same_message_id_in_another_turn_is_another_entry():
    rows = [message(1, "a", message_id="m", turn="t1"), message(2, "b", message_id="m", turn="t2")]
    assert [e["item"]["text"] for e in project_rows(rows)] == ["a", "b"]


def test_an_earlier_tools_last_update_keeps_every_entry_at_its_first_row():
    rows = [
        tool(1, "t", "running"),
        message(2, "Answer", message_id=None),
        tool(3, "t", "completed"),
        row(4, {"type": "user_message", "text": "next"}),
    ]
    assert [e["seq_start"] for e in project_rows(rows)] == [1, 2, 4]


def test_transitive_tool_updates_fold_into_their_first_rows():
    rows = [
        tool(1, "first", "running"),
        tool(2, "second", "running"),
        row(3, {"type": "user_message", "text": "Continue"}),
        tool(4, "first", "completed"),
        message(5, "Answer", message_id=None),
        tool(6, "second", "completed"),
    ]
    assert [(e["seq_start"], e["seq_end"]) for e in project_rows(rows)] == [(1, 4), (2, 6), (3, 3), (5, 5)]


def test_tool_call_updates_merge_as_paseo_merges_them():
    running = {
        "type": "tool_call",
        "callId": "c",
        "name": "shell",
        "status": "running",
        "detail": {"type": "shell", "command": "ls"},
        "metadata": {"a": 1},
        "error": None,
    }
    failed = {**running, "status": "failed", "detail": {"type": "unknown"}, "metadata": {"b": 2}, "error": "boom"}
    merged = merge_tool_call(running, failed)
    # An unknown detail never replaces a known one; metadata merges; a failure carries its error.
    assert merged["detail"] == {"type": "shell", "command": "ls"}
    assert merged["metadata"] == {"a": 1, "b": 2} and merged["error"] == "boom"
    done = merge_tool_call(merged, {**running, "status": "completed", "error": "stale"})
    assert done["status"] == "completed" and done["error"] is None
    plain = merge_tool_call({"type": "tool_call", "callId": "c", "name": "x", "status": "running"}, running)
    assert plain["detail"] == running["detail"]
    bare = merge_tool_call(
        {"type": "tool_call", "callId": "c", "name": "x", "status": "running"},
        {"type": "tool_call", "callId": "c", "name": "x", "status": "failed"},
    )
    assert "detail" not in bare and "metadata" not in bare and "error" not in bare


def test_plugin_updates_show_the_latest_item_where_the_first_was():
    rows = [
        row(1, {"type": "plugin", "pluginId": "p", "id": "x", "state": 1}),
        row(2, {"type": "user_message", "text": "u"}),
        row(3, {"type": "plugin", "pluginId": "p", "id": "x", "state": 2}),
    ]
    entries = project_rows(rows)
    assert (entries[0]["seq_start"], entries[0]["item"]["state"], entries[0]["collapsed"]) == (1, 2, ["identity"])


def test_seq_ranges_join_runs_that_touch():
    assert merge_ranges([[1, 2]], [[3, 3]]) == [[1, 3]]
    assert merge_ranges([[1, 2]], [[4, 5], [6, 6]]) == [[1, 2], [4, 6]]
    assert merge_ranges([], [[7, 7]]) == [[7, 7]]
