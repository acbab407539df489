"""The chartr timeline JSONL format, read one line at a time.

Line 1 is the header::

    {"type": "chartr.timeline", "version": 1, "agent_id": "...", "epoch": "...", "exported_at": "...", "min_seq": n}

and every later line is one committed row::

    {"seq": n, "committed_at": "...", "item_id": "..." | null, "item": {...}, "turn_id": "...",
     "provider_message_id": "...", "provider_timeline_item_id": "...", "revert_token": <any JSON>,
     "extra": {...}}

Rows must be contiguous from the header's ``min_seq`` (1 when absent: a
history whose older rows were pruned starts later). ``turn_id`` and the keys after it are
optional: a row without ``revert_token`` has none (``null`` is a null token). A last line without its newline that
does not parse is a write cut short by a crash: it is reported as a warning
and the complete lines before it stand. Blank lines are ignored.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from legacy.problems import RecordError
from snapshots.models import agent_id_validator
from timeline.items import MAX_ITEM_TYPE_LENGTH, contains_nul
from timeline.models import EPOCH_MAX_LENGTH
from timeline.rows import ItemId, ReadRow, RowKeys, problem, read_row, variant

HEADER_TYPE = "chartr.timeline"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Header:
    agent_id: str
    epoch: str
    #: the first seq of the file's rows
    min_seq: int = 1


@dataclass(frozen=True)
class Line:
    """One non-blank line: ``value`` parsed, or ``error`` (and ``truncated``
    when it is an unterminated last line)."""

    lineno: int
    value: Any = None
    error: str | None = None
    truncated: bool = False


def read_lines(path: Path) -> Iterator[Line]:
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, over-long integers
                yield Line(lineno, error=f"invalid JSON: {exc}", truncated=not raw.endswith(b"\n"))
                continue
            except RecursionError:
                yield Line(lineno, error="invalid JSON: nested too deeply")
                continue
            yield Line(lineno, value=value)


def parse_header(value: Any) -> Header:
    if not isinstance(value, dict) or value.get("type") != HEADER_TYPE:
        raise RecordError(f'line 1 must be the header {{"type": "{HEADER_TYPE}", ...}}')
    if value.get("version") != FORMAT_VERSION:
        raise RecordError(f"unsupported format version {value.get('version')!r} (expected {FORMAT_VERSION})")
    agent_id = value.get("agent_id")
    if not isinstance(agent_id, str):
        raise RecordError("header agent_id must be a string")
    try:
        agent_id_validator(agent_id)
    except Exception:
        raise RecordError(f"header agent_id {agent_id!r} is not a valid agent id") from None
    epoch = check_epoch(value.get("epoch"), "header epoch")
    min_seq = value.get("min_seq", 1)
    if not isinstance(min_seq, int) or isinstance(min_seq, bool) or min_seq < 1:
        raise RecordError(f"header min_seq must be a positive integer, not {min_seq!r}")
    return Header(agent_id=agent_id, epoch=epoch, min_seq=min_seq)


def check_epoch(epoch: Any, name: str = "epoch") -> str:
    """An epoch as a timeline stores one (a Paseo history's too)."""
    if not isinstance(epoch, str) or not epoch or len(epoch) > EPOCH_MAX_LENGTH or "\x00" in epoch:
        raise RecordError(f"{name} must be a string of 1 to {EPOCH_MAX_LENGTH} characters")
    return epoch


#: A row line: ``timeline.rows.Row`` with the export's ``item_id`` and ``extra``, its time read as every
#: legacy time is (without an offset, UTC).
FileRow = variant(
    "FileRow",
    types={"committed_at": dt.datetime},
    added=(("item_id", ItemId | None, None), ("extra", dict[str, Any] | None, None)),
)


def parse_row(value: Any, *, expected_seq: int) -> ReadRow:
    """A committed row; items are checked minimally: a JSON object with a string ``type``."""
    if not isinstance(value, dict):
        raise RecordError("a row must be a JSON object")
    seq = value.get("seq")
    if type(seq) is int and 1 <= seq != expected_seq:
        raise RecordError(f"seq {seq} where {expected_seq} was expected (rows must be contiguous from min_seq)")
    try:
        row = msgspec.convert(value, FileRow)
    except msgspec.ValidationError as exc:
        raise RecordError(problem(exc, value, FileRow)[1]) from None
    item_type = row.item.get("type")
    if not isinstance(item_type, str) or not item_type or len(item_type) > MAX_ITEM_TYPE_LENGTH:
        raise RecordError(f'item must have a "type" string of 1 to {MAX_ITEM_TYPE_LENGTH} characters')
    if contains_nul(value):
        raise RecordError("contains a NUL character (\\u0000), which chartr cannot store")
    return read_row(
        row,
        committed_at=row.committed_at if row.committed_at.tzinfo else row.committed_at.replace(tzinfo=dt.UTC),
        item_id=row.item_id,
        item_type=item_type,
        extra_json=_dump(row.extra) if row.extra else None,
    )


#: The optional string keys of a row.
SHORT_KEYS = RowKeys.__struct_fields__[:3]


# --- writing --------------------------------------------------------------


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def header_line(*, agent_id: str, epoch: str, exported_at: dt.datetime, min_seq: int = 1) -> str:
    return (
        _dump(
            {
                "type": HEADER_TYPE,
                "version": FORMAT_VERSION,
                "agent_id": agent_id,
                "epoch": epoch,
                "exported_at": exported_at.isoformat(),
                "min_seq": min_seq,
            }
        )
        + "\n"
    )


def row_line(
    *,
    seq: int,
    committed_at: dt.datetime,
    item_id: str | None,
    item: Any,
    turn_id: str | None = None,
    provider_message_id: str | None = None,
    provider_timeline_item_id: str | None = None,
    revert_token: Any = None,
    has_revert_token: bool = False,
    extra: dict | None = None,
) -> str:
    """A row line; its ``revert_token`` key only when it ``has_revert_token`` (a JSON null is a null token)."""
    row = {"seq": seq, "committed_at": committed_at.astimezone(dt.UTC).isoformat(), "item_id": item_id, "item": item}
    keys = zip(SHORT_KEYS, (turn_id, provider_message_id, provider_timeline_item_id), strict=True)
    row.update((name, value) for name, value in keys if value is not None)
    if has_revert_token:
        row["revert_token"] = revert_token
    if extra:
        row["extra"] = extra
    return _dump(row) + "\n"
