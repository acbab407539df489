"""Reading the records of an instance file into what the services take, each checked on its own line."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from portability.format import Line, Reader, parse_time
from portability.records import API_TOKEN, TIMELINE, Kind, RecordInvalid, check_keys, object_of, record_keys
from timeline.items import contains_nul
from timeline.models import TimelineRow
from timeline.writes.carried import CarriedRevision, CarriedTimeline

_ROW_STRINGS = ("item_id", "turn_id", "provider_message_id", "provider_timeline_item_id")
ROW_KEYS = {"type", "seq", "committed_at", "item_type", "item", *_ROW_STRINGS}
ROW_OPTIONAL_KEYS = {"revert_token", "extra", "revision", "update_seq"}
REVISION_KEYS = {"type", "seq", "revision", "replaced_at", "committed_at", "item_type", "item", *_ROW_STRINGS[1:]}
REVISION_OPTIONAL_KEYS = {"revert_token", "extra", "update_seq"}
_MAX = {name: TimelineRow._meta.get_field(name).max_length for name in (*_ROW_STRINGS, "item_type")}


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


def _string(record: dict, name: str) -> str | None:
    value = record[name]
    if value is not None and (not isinstance(value, str) or len(value) > _MAX[name]):
        raise RecordInvalid(f"{name} must be null or a string of at most {_MAX[name]} characters")
    return value


def parse_row(reader: Reader, line: Line, *, after: int, head_seq: int) -> ImportedRow:
    """A ``row`` record of the timeline whose last row so far is ``after``; rows ascend up to ``head_seq``."""
    record = line.record
    try:
        check_keys(record, ROW_KEYS | (ROW_OPTIONAL_KEYS & set(record)))
        seq = record["seq"]
        if not isinstance(seq, int) or isinstance(seq, bool) or not after < seq <= head_seq:
            raise RecordInvalid(
                f"seq must be an integer above {after} (the row before) and at most {head_seq} (head_seq), not {seq!r}"
            )
        content = _content(record)
        strings = {name: _string(record, name) for name in _ROW_STRINGS}
        versions = {name: _count(record, name) for name in ("revision", "update_seq")}
    except RecordInvalid as exc:
        raise reader.error(line, f"row: {exc}") from None
    return ImportedRow(
        seq=seq,
        **content,
        **strings,
        revert_token_json=_dump(record["revert_token"]) if "revert_token" in record else None,
        extra_json=_dump(record["extra"]) if "extra" in record else None,
        **versions,
    )


def _count(record: dict, name: str) -> int | None:
    """An optional positive integer key (left out: None)."""
    value = record.get(name)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value < 2**63):
        raise RecordInvalid(f"{name} must be a positive integer, not {value!r}")
    return value


def _content(record: dict) -> dict:
    """A row's or an earlier version's content: item, item_type, commit time, Paseo's keys, extra."""
    item = record["item"]
    if not isinstance(item, dict):
        raise RecordInvalid("item must be a JSON object")
    item_type = record["item_type"]
    if not isinstance(item_type, str) or not 1 <= len(item_type) <= _MAX["item_type"]:
        raise RecordInvalid(f"item_type must be a string of 1 to {_MAX['item_type']} characters")
    if "extra" in record and not isinstance(record["extra"], dict):
        raise RecordInvalid("extra must be a JSON object")
    if contains_nul(record):
        raise RecordInvalid("contains a NUL character (\\u0000), which chartr cannot store")
    return {"item": item, "item_type": item_type, "committed_at": _time(record, "committed_at")}


def _time(record: dict, name: str) -> dt.datetime:
    try:
        value = parse_time(record[name])
    except ValueError as exc:
        raise RecordInvalid(f"{name}: {exc}") from None
    if value is None:
        raise RecordInvalid(f"{name} cannot be null")
    return value


def parse_revision(reader: Reader, line: Line) -> CarriedRevision:
    """A ``row_revision`` record: an earlier version of the row at its ``seq``."""
    record = line.record
    try:
        check_keys(record, REVISION_KEYS | (REVISION_OPTIONAL_KEYS & set(record)))
        seq, revision = _count(record, "seq"), _count(record, "revision")
        if seq is None or revision is None:
            raise RecordInvalid("seq and revision must be positive integers")
        return CarriedRevision(
            seq=seq,
            revision=revision,
            update_seq=_count(record, "update_seq"),
            replaced_at=_time(record, "replaced_at"),
            **_content(record),
            **{name: _string(record, name) for name in _ROW_STRINGS[1:]},
            has_revert_token="revert_token" in record,
            revert_token=record.get("revert_token"),
            extra=record.get("extra"),
        )
    except RecordInvalid as exc:
        raise reader.error(line, f"row_revision: {exc}") from None
