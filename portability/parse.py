"""Reading the records of an instance file into what the services take, each checked on its own line."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from django.contrib.auth import get_user_model
from msgspec import UNSET, UnsetType

from portability.format import Line, Reader
from portability.records import API_TOKEN, TIMELINE, Kind, RecordInvalid, check_keys, object_of, record_keys
from timeline.items import contains_nul
from timeline.models import TimelineRow
from timeline.rows import CommitTime, ItemId, problem, row_keys, variant
from timeline.writes.carried import CarriedRevision, CarriedTimeline

_ROW_STRINGS = ("item_id", "turn_id", "provider_message_id", "provider_timeline_item_id")
ROW_KEYS = {"type", "seq", "committed_at", "item_type", "item", *_ROW_STRINGS}
ROW_OPTIONAL_KEYS = {"revert_token", "extra", "revision", "update_seq"}
REVISION_KEYS = {"type", "seq", "revision", "replaced_at", "committed_at", "item_type", "item", *_ROW_STRINGS[1:]}
REVISION_OPTIONAL_KEYS = {"revert_token", "extra", "update_seq"}
#: What an earlier version carries as its record holds it.
CARRIED = (*REVISION_KEYS - {"type"}, "update_seq")
_MAX_ITEM_TYPE = TimelineRow._meta.get_field("item_type").max_length


@dataclass(frozen=True)
class ImportedRow:
    """A row as ``timeline.services.bulk_append_timeline_rows`` takes it (``keep_seqs``: its own seq)."""

    seq: int
    committed_at: dt.datetime
    item_type: str
    item: dict
    item_id: str | None
    turn_id: str | None
    provider_message_id: str | None
    provider_timeline_item_id: str | None
    #: JSON text, None for SQL NULL (no token; no extra)
    revert_token_json: str | None
    extra_json: str | None
    #: The row's version and the update that wrote it; None for a row never updated.
    revision: int | None = None
    update_seq: int | None = None


def objects(reader: Reader, kind: Kind, lines: list[Line]) -> list:
    """The unsaved model instances of ``lines``; the first bad one raises, with its line."""
    found = []
    for line in lines:
        try:
            found.append(object_of(kind, line.record))
        except RecordInvalid as exc:
            raise reader.error(line, f"{kind.type}: {exc}") from None
    return found


def token_of(reader: Reader, line: Line):
    """An API token; its creator is the user of that username here, or nobody."""
    try:
        token = object_of(API_TOKEN, line.record, exclude=frozenset({"created_by"}))
        creator = line.record["created_by"]
        if creator is not None and not isinstance(creator, str):
            raise RecordInvalid(f"created_by must be a username or null, not {creator!r}")
    except RecordInvalid as exc:
        raise reader.error(line, f"api_token: {exc}") from None
    if creator is not None:
        token.created_by = (
            get_user_model()._default_manager.filter(**{get_user_model().USERNAME_FIELD: creator}).first()
        )
    return token


def carried_timeline(record: dict) -> CarriedTimeline:
    head = object_of(TIMELINE, record, exclude=frozenset({"agent"}))
    agent_id = record["agent_id"]
    if not isinstance(agent_id, str) or not agent_id:
        raise RecordInvalid(f"agent_id must be an agent's id, not {agent_id!r}")
    return CarriedTimeline(
        agent_id=agent_id,
        **{name: getattr(head, name) for name in record_keys(TIMELINE) - {"type", "agent_id"}},
    )


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


Count = Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]
ItemType = Annotated[str, msgspec.Meta(min_length=1, max_length=_MAX_ITEM_TYPE)]
#: What a ``row`` and a ``row_revision`` record hold beside ``timeline.rows.Row``'s keys.
_COLUMNS = (("item_type", ItemType), ("extra", dict[str, Any] | UnsetType, UNSET), ("update_seq", Count | None, None))
RowRecord = variant("RowRecord", added=(*_COLUMNS, ("item_id", ItemId | None, None), ("revision", Count | None, None)))
RevisionRecord = variant("RevisionRecord", added=(*_COLUMNS, ("revision", Count), ("replaced_at", CommitTime)))
_MUST_BE = {
    "item_type": f"a string of 1 to {_MAX_ITEM_TYPE} characters",
    "committed_at": "an ISO 8601 time with its UTC offset",
    "replaced_at": "an ISO 8601 time with its UTC offset",
    "extra": "a JSON object",
    "revision": "a positive integer",
    "update_seq": "a positive integer",
}


def _shaped(record: dict, shape: type):
    """``record`` converted to ``shape``, or ``RecordInvalid`` saying which key is wrong."""
    try:
        value = msgspec.convert(record, shape)
    except msgspec.ValidationError as exc:
        raise RecordInvalid(problem(exc, record, shape, **_MUST_BE)[1]) from None
    if contains_nul(record):
        raise RecordInvalid("contains a NUL character (\\u0000), which chartr cannot store")
    return value


def parse_row(reader: Reader, line: Line, *, after: int, head_seq: int) -> ImportedRow:
    """A ``row`` record of the timeline whose last row so far is ``after``; rows ascend up to ``head_seq``."""
    record = line.record
    try:
        check_keys(record, ROW_KEYS | (ROW_OPTIONAL_KEYS & set(record)))
        seq = record["seq"]
        if type(seq) is not int or not after < seq <= head_seq:
            raise RecordInvalid(
                f"seq must be an integer above {after} (the row before) and at most {head_seq} (head_seq), not {seq!r}"
            )
        row = _shaped(record, RowRecord)
    except RecordInvalid as exc:
        raise reader.error(line, f"row: {exc}") from None
    return ImportedRow(
        seq=seq,
        committed_at=row.committed_at,
        item_type=row.item_type,
        item=row.item,
        item_id=row.item_id,
        **row_keys(row),
        extra_json=None if row.extra is UNSET else _dump(row.extra),
        revision=row.revision,
        update_seq=row.update_seq,
    )


def parse_revision(reader: Reader, line: Line) -> CarriedRevision:
    """A ``row_revision`` record: an earlier version of the row at its ``seq``."""
    record = line.record
    try:
        check_keys(record, REVISION_KEYS | (REVISION_OPTIONAL_KEYS & set(record)))
        version = _shaped(record, RevisionRecord)
    except RecordInvalid as exc:
        raise reader.error(line, f"row_revision: {exc}") from None
    return CarriedRevision(
        **{name: getattr(version, name) for name in CARRIED},
        has_revert_token=version.revert_token is not UNSET,
        revert_token=None if version.revert_token is UNSET else version.revert_token,
        extra=None if version.extra is UNSET else version.extra,
    )
