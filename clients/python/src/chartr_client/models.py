"""The API's records and the live stream's events as frozen dataclasses.

Each record keeps the whole JSON object it came from in ``raw`` (fields a
newer server adds are there before this client names them); timestamps are
``datetime`` with their offset. Items (``TimelineRow.item``) stay plain JSON
objects: their set of types is open.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

JsonObject = dict[str, Any]


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is dt.datetime or dataclasses.is_dataclass(arg):
                return _convert(arg, value)
        return value
    if tp is dt.datetime:
        return dt.datetime.fromisoformat(value)
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return decode(tp, value)  # type: ignore[arg-type]
    return value


def decode(cls: type[T], data: JsonObject) -> T:
    """``cls`` from a JSON object: the fields it names (converted), the rest kept in ``raw``."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name == "raw":
            values["raw"] = data
        elif f.name in data:
            values[f.name] = _convert(hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = None
    return cls(**values)


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


# --- registry and agents ------------------------------------------------------


@dataclass(frozen=True)
class GrowthStats:
    agents: int
    timeline_rows: int
    timeline_bytes: int


@dataclass(frozen=True)
class Project:
    id: int
    directory: str
    display_name: str
    kind: str
    git_remote: str | None
    extra: JsonObject
    created_at: dt.datetime
    updated_at: dt.datetime
    archived_at: dt.datetime | None
    archive_operation: str | None
    stats: GrowthStats | None
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class Workspace:
    id: int
    project_id: int
    directory: str
    display_name: str
    kind: str
    branch: str | None
    worktree_root: str | None
    extra: JsonObject
    created_at: dt.datetime
    updated_at: dt.datetime
    archived_at: dt.datetime | None
    archive_operation: str | None
    stats: GrowthStats | None
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class Agent:
    agent_id: str
    workspace_id: int
    project_id: int
    cwd: str
    provider: str
    title: str | None
    labels: dict[str, str] | None
    lifecycle: str
    stale: bool
    last_mode_id: str | None
    config: JsonObject | None
    runtime_info: JsonObject | None
    persistence: JsonObject | None
    requires_attention: bool
    attention_reason: str | None
    attention_at: dt.datetime | None
    internal: bool
    extra: JsonObject
    created_at: dt.datetime
    updated_at: dt.datetime
    last_activity_at: dt.datetime | None
    last_user_message_at: dt.datetime | None
    last_seen_at: dt.datetime | None
    archived_at: dt.datetime | None
    archive_operation: str | None
    #: The agent's ETag: pass it as ``if_version`` to ``update_agent``.
    version: int
    head_seq: int
    min_seq: int
    timeline_epoch: str
    timeline_rows: int
    timeline_bytes: int
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list; pass ``next_cursor`` back as ``cursor`` (None on the last page)."""

    results: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class ArchiveResult(Generic[T]):
    """An archive's or unarchive's answer: the record as it is now, and what the call took or restored."""

    record: T
    counts: dict[str, int]


# --- timeline -------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineRow:
    """One committed row, from a canonical read or the stream's ``committed`` event."""

    seq: int
    committed_at: dt.datetime
    item_type: str
    item: JsonObject
    item_id: str | None
    turn_id: str | None = None
    provider_message_id: str | None = None
    provider_timeline_item_id: str | None = None
    revert_token: Any = None
    extra: JsonObject = field(default_factory=dict)
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class ProjectedEntry:
    """A run of rows merged by ``projection="projected"``, or one row, with its seq range."""

    seq_start: int
    seq_end: int
    committed_at: dt.datetime
    item_type: str
    item: JsonObject
    item_ids: list[str | None]
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class Window:
    min_seq: int
    max_seq: int
    next_seq: int


@dataclass(frozen=True)
class TimelinePage:
    agent_id: str
    epoch: str
    direction: str
    rows: list[TimelineRow | ProjectedEntry]
    window: Window
    has_older: bool
    has_newer: bool
    reset: bool
    stale_cursor: bool
    gap: bool
    holes: list[list[int]]
    raw: JsonObject = _raw()


def decode_page(data: JsonObject) -> TimelinePage:
    page = decode(TimelinePage, {**data, "rows": []})
    rows: list[TimelineRow | ProjectedEntry] = [
        decode(ProjectedEntry, row) if "seq_start" in row else decode(TimelineRow, row) for row in data["rows"]
    ]
    return dataclasses.replace(page, rows=rows, raw=data)


@dataclass(frozen=True)
class CommittedRef:
    seq: int
    committed_at: dt.datetime
    item_id: str | None


@dataclass(frozen=True)
class AppendResult:
    """``rows`` in call order. ``created`` is False when every item was committed before (a replay: 200)."""

    rows: list[CommittedRef]
    head_seq: int
    epoch: str
    created: bool = True
    raw: JsonObject = _raw()


def decode_append(data: JsonObject, *, created: bool) -> AppendResult:
    result = decode(AppendResult, data)
    return dataclasses.replace(result, rows=[decode(CommittedRef, row) for row in data["rows"]], created=created)


@dataclass(frozen=True)
class NewItem:
    """An item to append. Without ``item_id`` the client gives it one (a UUID), so a retry is safe."""

    item: JsonObject
    item_id: str | None = None


# --- the live stream --------------------------------------------------------------


@dataclass(frozen=True)
class Committed:
    """``committed``: a row of the history, each seq exactly once and in order."""

    row: TimelineRow


@dataclass(frozen=True)
class Provisional:
    """``provisional``: a streaming update, never stored; the committed row with the same ``item_id`` replaces it."""

    item: JsonObject
    item_id: str | None


@dataclass(frozen=True)
class AgentEvent:
    """``agent``: the agent's state (``reason`` ``snapshot`` on every (re)connect, then ``updated``,
    ``archived``, ``unarchived``, ``changed``), or ``deleted`` (then the stream ends)."""

    agent_id: str
    reason: str
    deleted: bool = False
    lifecycle: str | None = None
    requires_attention: bool | None = None
    attention_reason: str | None = None
    attention_at: dt.datetime | None = None
    archived_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    version: int | None = None
    head_seq: int | None = None
    epoch: str | None = None
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class Reset:
    """``reset``: the rows held belong to another history (``epoch``), the cursor was ahead of it
    (``cursor_ahead``), or rows after it are no longer retained (``gap``). Drop what you hold and
    re-read the tail; the stream goes on after ``head_seq`` (after ``min_seq - 1`` for ``gap``)."""

    reason: str
    epoch: str
    head_seq: int
    min_seq: int
    raw: JsonObject = _raw()


@dataclass(frozen=True)
class UnknownEvent:
    """An event this client does not know (a newer server's), as it came."""

    event: str
    data: Any
    id: str | None


StreamEvent = Committed | Provisional | AgentEvent | Reset | UnknownEvent
