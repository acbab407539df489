"""The rows of one read of the admin's timeline page as the entries it shows.

Each row is an entry rendered by its item type, but a tool call's later status
updates (same ``callId``, same turn: ``timeline.reads.projection.identity``) join the
entry of its first row on the page, which shows the call as it is now
(``timeline.reads.projection.merge_tool_call``) and lists its states; its rows from
just before the page (``timeline.selectors.earlier_tool_call_rows``) are
merged in and listed too, linked to their own page. Values are shaped by
``timeline.console.rendering`` (escaped there); the entry the page is anchored on (a
search's match, a jumped-to seq) is open, with the search's words marked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from timeline.console.foreign import shown_items
from timeline.console.rendering import (
    MAX_RENDERED_CHARS,
    TEXT_FOLD_AFTER_LINES,
    Block,
    json_block,
    marked,
    one_line,
    search_pattern,
    text_block,
    value_block,
)
from timeline.models import TimelineRow
from timeline.reads.projection import identity, merge_tool_call

TEXT_ITEM_TYPES = {"user_message", "assistant_message", "reasoning"}
KNOWN_ITEM_TYPES = TEXT_ITEM_TYPES | {"tool_call", "todo", "interaction", "error", "compaction"}
#: A tool call's fields shown in its one-line summary, not as blocks.
TOOL_SUMMARY_KEYS = frozenset({"type", "name", "status", "callId", "detail", "error", "metadata"})
#: The order a tool call's values read best in (what was asked, then what came of it); others follow by name.
TOOL_VALUE_ORDER = (
    "command",
    "cwd",
    "filePath",
    "url",
    "query",
    "prompt",
    "description",
    "label",
    "input",
    "oldString",
    "newString",
    "unifiedDiff",
    "content",
    "text",
    "output",
    "result",
    "log",
    "exitCode",
)
#: A foreign row's record is shown whole once its disclosure is opened (it is cut at MAX_RENDERED_CHARS).
RECORD_FOLD_AFTER_LINES = 100_000
#: The values a folded tool call previews on its summary line, the first present.
TOOL_PREVIEW_KEYS = ("command", "filePath", "url", "query", "label", "input", "text")


@dataclass
class ToolState:
    """One row of a tool call: its status then."""

    seq: int
    status: str
    committed_at: Any
    #: Whether the row is on this page (an anchor here) or before it (a link to its page).
    here: bool


@dataclass
class TimelineEntry:
    """One entry of the page: a row, or a tool call with all its rows."""

    seq: int
    committed_at: Any
    item_type: str
    item_id: str | None
    #: Which rendering the template uses: an item type from KNOWN_ITEM_TYPES, or "generic".
    kind: str
    #: The rows of this read shown by this entry (``seq`` first).
    seqs: list[int] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    name: SafeString = SafeString("")
    status: str = ""
    call_id: str = ""
    #: What identifies a tool call across reads (the live tail replaces its entry by it).
    call_key: str = ""
    #: A tool call's detail type ("shell", "edit", ...), when known.
    detail_type: str = ""
    preview: SafeString = SafeString("")
    states: list[ToolState] = field(default_factory=list)
    #: (label, "done" | "active" | "open") per todo of a todo list.
    todo_items: list[tuple[SafeString, str]] = field(default_factory=list)
    #: The entry the page is anchored on: open, the search's words marked.
    hit: bool = False
    #: Which of its row's items this entry shows (0 for the first): a foreign record may read as several.
    part: int = 0
    #: The foreign records this entry reads (its rows' untouched records), one click away.
    records: list[tuple[int, Block]] = field(default_factory=list)

    @property
    def last_seq(self) -> int:
        return max(self.seqs)

    @property
    def todos_done(self) -> int:
        return sum(1 for _, state in self.todo_items if state == "done")

    @property
    def truncated(self) -> bool:
        return any(block.truncated for block in self.blocks)

    @property
    def max_rendered_chars(self) -> int:
        return MAX_RENDERED_CHARS


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else one_line(value, 200)


def _ordered(values: dict[str, Any]) -> list[tuple[str, Any]]:
    rank = {name: index for index, name in enumerate(TOOL_VALUE_ORDER)}
    return sorted(values.items(), key=lambda pair: (rank.get(pair[0], len(rank)), pair[0]))


def _tool_blocks(item: dict, pattern) -> list[Block]:
    detail = item.get("detail")
    values = {key: value for key, value in item.items() if key not in TOOL_SUMMARY_KEYS}
    if isinstance(detail, dict):
        values.update((key, value) for key, value in detail.items() if key != "type")
    elif detail is not None:
        values["detail"] = detail
    blocks = [value_block(key, value, pattern=pattern) for key, value in _ordered(values) if value is not None]
    if item.get("error") not in (None, ""):
        blocks.append(value_block("error", item["error"], pattern=pattern))
    if item.get("metadata"):
        blocks.append(json_block("metadata", item["metadata"], pattern=pattern))
    return blocks


def _item(row: TimelineRow) -> dict:
    return row.item if isinstance(row.item, dict) else {"value": row.item}


def _tool_entry(entry: TimelineEntry, rows: list[TimelineRow], page_seqs: set[int], pattern) -> None:
    item = _item(rows[0])
    for row in rows[1:]:
        item = merge_tool_call(item, _item(row))
    detail = item.get("detail") if isinstance(item.get("detail"), dict) else {}
    entry.name = marked(_text(item.get("name", "")), pattern)
    entry.status = _text(item.get("status", ""))
    entry.call_id = _text(item.get("callId", ""))
    entry.detail_type = _text(detail.get("type", "")) if detail.get("type") != "unknown" else ""
    entry.blocks = _tool_blocks(item, pattern)
    entry.states = [
        ToolState(
            seq=row.seq,
            status=_text(_item(row).get("status", "")),
            committed_at=row.committed_at,
            here=row.seq in page_seqs,
        )
        for row in rows
    ]
    shown = {**item, **detail}
    preview = next((shown[key] for key in TOOL_PREVIEW_KEYS if shown.get(key) not in (None, "", {}, [])), None)
    entry.preview = marked(one_line(preview), pattern) if preview is not None else SafeString("")


#: A todo's state, from Paseo's ``completed`` flag or a ``status`` word.
TODO_DONE = frozenset({"completed", "complete", "done"})
TODO_ACTIVE = frozenset({"in_progress", "in-progress", "active", "running"})


def _todo_state(todo: dict) -> str:
    """ "done", "active" (being worked on) or "open"."""
    status = todo.get("status")
    if todo.get("completed") is True or status in TODO_DONE:
        return "done"
    return "active" if status in TODO_ACTIVE else "open"


def _todo_items(todos: Any, pattern) -> list[tuple[SafeString, str]]:
    """(label, state) per todo; state is "done", "active" or "open" (a plain string is open)."""
    shown = []
    for todo in todos if isinstance(todos, list) else []:
        if isinstance(todo, dict):
            label = todo.get("content", todo.get("text", todo.get("title", todo)))
            text = _text(label) if isinstance(label, str) else one_line(label, 500)
            shown.append((marked(text, pattern), _todo_state(todo)))
        else:
            shown.append((marked(_text(todo), pattern), "open"))
    return shown


#: Per kind: the key shown as the entry's main text.
_MAIN_TEXT = {**dict.fromkeys(TEXT_ITEM_TYPES, "text"), "error": "message", "interaction": "request"}


def _row_entry(entry: TimelineEntry, item: dict, pattern) -> None:
    kind = entry.kind
    shown: set[str] = {"type"}
    if kind in _MAIN_TEXT:
        key = _MAIN_TEXT[kind]
        shown.add(key)
        value = item.get(key, "")
        entry.blocks.append(
            text_block("", value, pattern=pattern)
            if isinstance(value, str)
            else value_block("", value, pattern=pattern, fold_after=TEXT_FOLD_AFTER_LINES)
        )
    elif kind == "todo":
        entry.todo_items = _todo_items(item.get("items"), pattern)
        if isinstance(item.get("items"), list):
            shown.add("items")
    elif kind == "compaction":
        entry.status = _text(item.get("status", ""))
        shown.add("status")
    rest = {key: value for key, value in item.items() if key not in shown}
    if kind == "generic":
        entry.blocks.extend(value_block(key, value, pattern=pattern) for key, value in _ordered(rest))
    elif rest:
        entry.blocks.append(json_block("more", rest, pattern=pattern))


@dataclass(frozen=True)
class ForeignRowView:
    """One item a foreign row reads as (``timeline.console.foreign``), standing in for the row:
    ``item_type`` and ``item`` are the shown item's, ``stored_type`` and ``record`` the row's own."""

    row: TimelineRow
    item: dict
    part: int

    seq = property(lambda self: self.row.seq)
    committed_at = property(lambda self: self.row.committed_at)
    item_id = property(lambda self: self.row.item_id)
    turn_id = property(lambda self: self.row.turn_id)
    item_type = property(lambda self: self.item.get("type", ""))
    stored_type = property(lambda self: self.row.item_type)
    record = property(lambda self: self.row.item.get("record"))


def _shown_rows(rows: Iterable[TimelineRow]) -> list:
    """``rows`` as the page shows them: a foreign row as each item it reads as (a line of its own type
    when it reads as none), every other row as it is."""
    shown: list = []
    for row in rows:
        items = shown_items(row.item)
        if items is None:
            shown.append(row)
            continue
        for part, item in enumerate(items or [{"type": row.item_type}]):
            shown.append(ForeignRowView(row=row, item=item, part=part))
    return shown


def _groups(rows: list[TimelineRow], earlier: Iterable[TimelineRow]) -> list[list[TimelineRow]]:
    """``rows`` grouped: a tool call's rows (with its ``earlier`` ones first) in one group, each other row alone."""
    before: dict[tuple, list[TimelineRow]] = {}
    for row in earlier:
        key = _call_key(row)
        if key is not None:
            before.setdefault(key, []).append(row)
    groups: list[list[TimelineRow]] = []
    index_of: dict[tuple, int] = {}
    for row in rows:
        key = _call_key(row)
        if key is None:
            groups.append([row])
        elif key in index_of:
            groups[index_of[key]].append(row)
        else:
            index_of[key] = len(groups)
            groups.append([*before.get(key, []), row])
    return groups


def _call_key(row: TimelineRow) -> tuple | None:
    if row.item_type != "tool_call":
        return None
    key = identity(row.item)
    return None if key is None else (key[1], row.turn_id or "")


def build_entries(
    rows: list[TimelineRow], *, earlier: Iterable[TimelineRow] = (), anchor: int | None = None, query: str = ""
) -> list[TimelineEntry]:
    """The entries of ``rows`` (ascending): ``anchor``'s is the hit, its ``query`` words marked."""
    page_seqs = {row.seq for row in rows}
    pattern = search_pattern(query) if query else None
    entries = []
    for group in _groups(_shown_rows(rows), _shown_rows(earlier)):
        here = [row for row in group if row.seq in page_seqs]
        first = here[0]
        entry = TimelineEntry(
            seq=first.seq,
            committed_at=first.committed_at,
            item_type=getattr(first, "stored_type", first.item_type),
            item_id=first.item_id,
            kind=first.item_type if first.item_type in KNOWN_ITEM_TYPES else "generic",
            seqs=[row.seq for row in here],
            hit=anchor in {row.seq for row in here},
            part=getattr(first, "part", 0),
        )
        hit_pattern = pattern if entry.hit else None
        if entry.kind == "tool_call":
            key = _call_key(first)
            entry.call_key = json.dumps(list(key), ensure_ascii=False) if key is not None else ""
            _tool_entry(entry, group, page_seqs, hit_pattern)
        else:
            _row_entry(entry, _item(first), hit_pattern)
        records = {row.seq: row.record for row in group if isinstance(row, ForeignRowView)}
        entry.records = [
            (seq, json_block("record", record, pattern=hit_pattern, fold_after=RECORD_FOLD_AFTER_LINES))
            for seq, record in records.items()
        ]
        entries.append(entry)
    return entries
