"""Paseo's projected timeline: rows folded into the entries a UI shows.

The same rules as Paseo's ``projectTimelineRows`` (server/agent/timeline-projection.ts),
in the same order, over the rows of one read (see docs/timeline.md, "The projected view"):

1. **By identity.** Rows that name the same thing fold into the entry of its first row:
   a ``tool_call``'s updates (same ``callId``, same turn) into its latest state (Paseo's
   ``mergeToolCallItems``), a ``plugin``'s (same ``pluginId``/``id``) into its latest item,
   and the chunks of one ``assistant_message`` (same ``messageId``, same turn) into one text,
   whatever rows lie between them (a steering prompt recorded mid-stream).
   The same id in another turn starts a new entry.
2. **Adjacent chunks.** An ``assistant_message`` right after an ``assistant_message`` entry
   (``seq_start == seq_end + 1`` of the one before, same turn) joins it unless it names another
   ``messageId``; ``reasoning`` chunks join the same way.

Every entry carries ``seq_start`` (its first row, where it shows), ``seq_end`` (its last row) and
``source_seq_ranges``: the ``[first, last]`` runs of the seqs folded into it.
"""

from __future__ import annotations

from typing import Any

TOOL_LIFECYCLE = "tool_lifecycle"
ASSISTANT_MERGE = "assistant_merge"
REASONING_MERGE = "reasoning_merge"
IDENTITY = "identity"
#: A tool call's final statuses: reaching one clears the error an earlier update had.
TOOL_CALL_DONE = ("completed", "canceled")


def project_rows(rows: list[dict]) -> list[dict]:
    """The projected entries of ``rows`` (ascending, dicts of the page's ROW_FIELDS, items decoded)."""
    entries = _collapse_by_identity([_entry(row) for row in rows])
    entries = _merge_adjacent(entries, "assistant_message", ASSISTANT_MERGE)
    return _merge_adjacent(entries, "reasoning", REASONING_MERGE)


def _entry(row: dict) -> dict:
    return {
        "seq_start": row["seq"],
        "seq_end": row["seq"],
        "source_seq_ranges": [[row["seq"], row["seq"]]],
        "committed_at": row["committed_at"],
        "item_type": row["item_type"],
        "item": row["item"],
        "item_ids": [row["item_id"]],
        "turn_id": row["turn_id"] or None,
        "collapsed": [],
    }


def identity(item: Any) -> tuple[str, str] | None:
    """What a row's item is an update of (Paseo's ``timelineItemIdentity``), or None."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "tool_call" and isinstance(item.get("callId"), str):
        return kind, item["callId"]
    if kind == "plugin" and isinstance(item.get("pluginId"), str) and isinstance(item.get("id"), str):
        return kind, f"{item['pluginId']}/{item['id']}"
    if kind == "assistant_message" and isinstance(item.get("messageId"), str) and item["messageId"]:
        return kind, item["messageId"]
    return None


def merge_ranges(existing: list[list[int]], incoming: list[list[int]]) -> list[list[int]]:
    """``existing`` with ``incoming``'s seqs added: a run that starts at most one past the last joins it."""
    merged = [list(run) for run in existing]
    for first, last in incoming:
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


def _folded(existing: dict, entry: dict, kind: str, **changes) -> dict:
    collapsed = existing["collapsed"] if kind in existing["collapsed"] else [*existing["collapsed"], kind]
    return {
        **existing,
        "committed_at": entry["committed_at"],
        "source_seq_ranges": merge_ranges(existing["source_seq_ranges"], entry["source_seq_ranges"]),
        "item_ids": existing["item_ids"] + entry["item_ids"],
        "collapsed": collapsed,
        **changes,
    }


def _merge_identified(existing: dict, entry: dict) -> dict | None:
    kind = entry["item_type"]
    if existing["item_type"] != kind:
        return None
    if kind == "plugin":  # the latest item, shown where the first was
        return _folded(
            existing, entry, IDENTITY, item=entry["item"], turn_id=entry["turn_id"], seq_end=entry["seq_end"]
        )
    if existing["turn_id"] != entry["turn_id"]:
        return None
    seq_end = max(existing["seq_end"], entry["seq_end"])
    if kind == "tool_call":
        return _folded(
            existing, entry, TOOL_LIFECYCLE, item=merge_tool_call(existing["item"], entry["item"]), seq_end=seq_end
        )
    return _folded(existing, entry, ASSISTANT_MERGE, item=_joined(existing["item"], entry["item"]), seq_end=seq_end)


def _collapse_by_identity(entries: list[dict]) -> list[dict]:
    output: list[dict] = []
    index_of: dict[tuple[str, str], int] = {}
    for entry in entries:
        key = identity(entry["item"])
        found = index_of.get(key) if key is not None else None
        merged = _merge_identified(output[found], entry) if found is not None else None
        if merged is not None:
            output[found] = merged
            continue
        if key is not None:
            index_of[key] = len(output)
        output.append(entry)
    return output


def _merge_adjacent(entries: list[dict], kind: str, collapse: str) -> list[dict]:
    output: list[dict] = []
    for entry in entries:
        previous = output[-1] if output else None
        if (
            previous is None
            or previous["item_type"] != kind
            or entry["item_type"] != kind
            or previous["seq_end"] + 1 != entry["seq_start"]
            or previous["turn_id"] != entry["turn_id"]
            or (kind == "assistant_message" and not _continues(previous["item"], entry["item"]))
        ):
            output.append(entry)
            continue
        merged = _folded(
            previous, entry, collapse, item=_joined(previous["item"], entry["item"]), seq_end=entry["seq_end"]
        )
        merged["collapsed"] = list(dict.fromkeys([*previous["collapsed"], *entry["collapsed"], collapse]))
        output[-1] = merged
    return output


def _continues(previous: dict, item: dict) -> bool:
    """Whether an adjacent assistant chunk continues ``previous``: it names no other message."""
    return "messageId" not in item or item.get("messageId") == previous.get("messageId")


def _joined(previous: dict, item: dict) -> dict:
    """Two chunks as one item: ``{"type", "text"}`` and the first's ``messageId`` (as Paseo joins them)."""
    joined = {"type": previous.get("type"), "text": f"{previous.get('text', '')}{item.get('text', '')}"}
    if previous.get("type") == "assistant_message" and previous.get("messageId"):
        joined["messageId"] = previous["messageId"]
    return joined


def merge_tool_call(existing: dict, incoming: dict) -> dict:
    """A tool call's state after an update (Paseo's ``mergeToolCallItems``)."""
    merged = {**existing, **incoming}
    detail = _merged_detail(existing.get("detail"), incoming.get("detail"), "detail" in incoming)
    if detail is None and "detail" not in existing and "detail" not in incoming:
        merged.pop("detail", None)
    else:
        merged["detail"] = detail
    metadata = [value for value in (existing.get("metadata"), incoming.get("metadata")) if value]
    if metadata:
        merged["metadata"] = {key: value for part in metadata if isinstance(part, dict) for key, value in part.items()}
    else:
        merged.pop("metadata", None)
    status = incoming.get("status")
    if status == "failed":
        if "error" in incoming:
            merged["error"] = incoming["error"]
        else:
            merged.pop("error", None)
    elif status in TOOL_CALL_DONE:
        merged["error"] = None
    return merged


def _merged_detail(existing: Any, incoming: Any, incoming_has: bool) -> Any:
    """An ``unknown`` detail never replaces a known one, nor survives a known one."""
    if isinstance(existing, dict) and isinstance(incoming, dict):
        if existing.get("type") == "unknown" and incoming.get("type") != "unknown":
            return incoming
        if incoming.get("type") == "unknown" and existing.get("type") != "unknown":
            return existing
        return incoming
    return incoming if incoming_has else existing
