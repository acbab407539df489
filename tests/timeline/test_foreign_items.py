"""Another program's records kept whole as timeline items (``timeline.items.foreign_item``)."""

from __future__ import annotations

import pytest

from timeline.items import foreign_item, foreign_record, item_problems

RECORD = {
    "type": "assistant",
    "uuid": "7d1c0e8e-1b43-4cf4-9d59-7f3e0f0b6a61",
    "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
    # Fields that look like chartr's own item fields must not be checked as such.
    "status": 17,
    "text": None,
}


def test_a_foreign_record_is_wrapped_untouched_and_passes_the_checks():
    item = foreign_item("claude_code", RECORD, RECORD["type"])

    assert item == {"type": "claude_code.assistant", "record": RECORD}
    assert item_problems(item) == []
    assert foreign_record(item, "claude_code") is RECORD
    assert foreign_record(item, "codex") is None
    assert foreign_record({"type": "user_message", "text": "hi"}, "claude_code") is None


@pytest.mark.parametrize("record_type", [None, 3, "", "x" * 80])
def test_a_record_without_a_usable_type_gets_the_fallback(record_type):
    item = foreign_item("codex", {"payload": 1}, record_type)

    assert item["type"] == "codex.record"
    assert item_problems(item) == []


@pytest.mark.parametrize(
    "item",
    [
        {"type": "codex.response_item"},
        {"type": "codex.response_item", "record": [1]},
        {"type": "claude_code.user", "record": {}, "extra": 1},
    ],
)
def test_a_foreign_item_is_exactly_type_and_record(item):
    assert item_problems(item) != []


def test_an_unknown_namespace_is_refused():
    with pytest.raises(ValueError):
        foreign_item("gemini", {}, "x")
