"""Reading the records of an instance file into what the services take, each checked on its own line."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.contrib.auth import get_user_model
from msgspec import UNSET, UnsetType

from portability.format import Line, Reader
from portability.records import API_TOKEN, TIMELINE, Kind, RecordInvalid, check_keys, object_of, record_keys
from timeline.items import MAX_ITEM_TYPE_LENGTH, contains_nul, item_json
from timeline.models import MAX_ROW_KEY_LENGTH
from timeline.rows import CommitTime, ItemId, ReadRow, problem, read_row, variant
from timeline.writes.carried import CarriedRevision, CarriedTimeline


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


Count = Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]
ItemType = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ITEM_TYPE_LENGTH)]
#: What a ``row`` and a ``row_revision`` record hold beside ``timeline.rows.Row``'s keys.
_COLUMNS = (("item_type", ItemType), ("extra", dict[str, Any] | UnsetType, UNSET), ("update_seq", Count | None, None))
#: An instance file carries what a database holds, an empty turn or provider id too (an earlier JSONL
#: import stored some; the API and today's importers refuse one).
_PASEO_KEYS = ("turn_id", "provider_message_id", "provider_timeline_item_id")
_HELD = dict.fromkeys(_PASEO_KEYS, Annotated[str, msgspec.Meta(max_length=MAX_ROW_KEY_LENGTH)] | None)
_HELD_MUST_BE = dict.fromkeys(_PASEO_KEYS, f"null or a string of at most {MAX_ROW_KEY_LENGTH} characters")
RowRecord = variant(
    "RowRecord", types=_HELD, added=(*_COLUMNS, ("item_id", ItemId | None, None), ("revision", Count | None, None))
)
RevisionRecord = variant(
    "RevisionRecord", types=_HELD, added=(*_COLUMNS, ("revision", Count), ("replaced_at", CommitTime))
)
ROW_OPTIONAL_KEYS = {"revert_token", "extra", "revision", "update_seq"}
REVISION_OPTIONAL_KEYS = ROW_OPTIONAL_KEYS - {"revision"}
ROW_KEYS = {"type", *RowRecord.__struct_fields__} - ROW_OPTIONAL_KEYS
REVISION_KEYS = {"type", *RevisionRecord.__struct_fields__} - REVISION_OPTIONAL_KEYS
_OFFSET = "an ISO 8601 time with its UTC offset"


def _shaped(record: dict, shape: type):
    """``record`` converted to ``shape``, or ``RecordInvalid`` saying which key is wrong."""
    try:
        value = msgspec.convert(record, shape)
    except msgspec.ValidationError as exc:
        raise RecordInvalid(
            problem(exc, record, shape, committed_at=_OFFSET, replaced_at=_OFFSET, **_HELD_MUST_BE)[1]
        ) from None
    if contains_nul(record):
        raise RecordInvalid("contains a NUL character (\\u0000), which chartr cannot store")
    return value


def parse_row(reader: Reader, line: Line, *, after: int, head_seq: int) -> ReadRow:
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
    return read_row(
        row,
        item_type=row.item_type,
        item_id=row.item_id,
        extra_json=None if row.extra is UNSET else item_json(row.extra),
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
        **{name: getattr(version, name) for name in (REVISION_KEYS | {"update_seq"}) - {"type"}},
        has_revert_token=version.revert_token is not UNSET,
        revert_token=None if version.revert_token is UNSET else version.revert_token,
        extra=None if version.extra is UNSET else version.extra,
    )
