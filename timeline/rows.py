"""A committed timeline row's shape, declared once: ``{seq, committed_at, item}`` and Paseo's optional keys.

``Row`` is the row in chartr's spelling (the API, the JSONL export, the instance file); ``PaseoRow`` is the
same row in Paseo's own (camelCase, ``timestamp`` for ``committed_at``). Every reader converts what it was
sent with ``msgspec.convert`` or ``msgspec.json.decode`` and keeps only its own context rules (which seq comes
next, unknown keys, how it reports a refusal: ``problem`` words msgspec's ``ValidationError`` as the
importers do). The item's own rules are timeline/items.py's.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from timeline.items import MAX_ITEM_ID_LENGTH, MAX_ITEM_TYPE_LENGTH, item_json
from timeline.models import MAX_ROW_KEY_LENGTH

ITEM_REF = {"$ref": "#/components/schemas/TimelineItem"}

Seq = Annotated[int, msgspec.Meta(ge=1)]
#: RFC 3339 with its offset.
CommitTime = Annotated[dt.datetime, msgspec.Meta(tz=True, extra_json_schema={"format": "date-time"})]
#: One of Paseo's string row keys (``turnId``, ``providerMessageId``, ``providerTimelineItemId``).
RowKey = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ROW_KEY_LENGTH)]
ItemId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ITEM_ID_LENGTH)]
#: An item as sent: a JSON object (timeline/items.py checks its type and fields).
Item = Annotated[
    dict[str, Any],
    msgspec.Meta(
        description="A JSON object with a string `type`; known types have required fields.",
        extra_json_schema={"allOf": [ITEM_REF]},
    ),
]
#: Paseo's ``revertToken``: any JSON value; a row without the key has none, ``null`` is a null token.
RevertToken = Annotated[
    Any,
    msgspec.Meta(description="Paseo's revertToken: any JSON value (null is a null token); leave the key out for none."),
]


class RowKeys(msgspec.Struct, kw_only=True):
    """Paseo's keys beside a row's item (all optional)."""

    turn_id: Annotated[RowKey, msgspec.Meta(description="Paseo's turnId.")] | None = None
    provider_message_id: Annotated[RowKey, msgspec.Meta(description="Paseo's providerMessageId.")] | None = None
    provider_timeline_item_id: Annotated[RowKey, msgspec.Meta(description="Paseo's providerTimelineItemId.")] | None = (
        None
    )
    revert_token: RevertToken | msgspec.UnsetType = msgspec.UNSET


class Row(RowKeys, kw_only=True):
    """One committed row at its own seq."""

    seq: Seq
    committed_at: Annotated[CommitTime, msgspec.Meta(description="The row's commit time (Paseo's timestamp).")]
    item: Item


def variant(name: str, shape: type = Row, *, rename: Any = None, types: dict | None = None, added: tuple = ()):
    """``shape`` as a reader spells it (``rename``), with some fields' types replaced (``types``: the
    reader's own leniency) and optional fields ``added`` (``(name, type, default)``)."""
    fields = [
        (f.name, (types or {}).get(f.name, f.type), *(() if f.required else (f.default,)))
        for f in msgspec.structs.fields(shape)
    ]
    return msgspec.defstruct(name, [*fields, *added], kw_only=True, rename=rename)


def paseo_name(name: str) -> str:
    """A row key as Paseo spells it: camelCase, ``timestamp`` for ``committed_at``."""
    return "timestamp" if name == "committed_at" else re.sub(r"_([a-z])", lambda m: m[1].upper(), name)


#: ``Row`` as Paseo's own stores spell it (``AgentTimelineRow``): its older SQLite cache may hold the
#: ``timestamp`` as epoch milliseconds.
PaseoRow = variant("PaseoRow", rename=paseo_name, types={"committed_at": dt.datetime | float})


def row_keys(row: Any) -> dict[str, Any]:
    """``row``'s commit time and Paseo keys as the services take them (``revert_token_json``: None when
    the row has none, its compact JSON text otherwise, ``"null"`` for a null token)."""
    token = row.revert_token
    return {
        "committed_at": row.committed_at,
        "turn_id": row.turn_id,
        "provider_message_id": row.provider_message_id,
        "provider_timeline_item_id": row.provider_timeline_item_id,
        "revert_token_json": None if token is msgspec.UNSET else item_json(token),
    }


@dataclass(frozen=True)
class ReadRow:
    """A row read at its own seq (an importer's, or Paseo's over HTTP: ``timeline.writes.history``), as
    ``timeline.services.bulk_append_timeline_rows`` takes it (``keep_seqs``)."""

    seq: int
    committed_at: dt.datetime
    item: dict
    item_type: str
    item_id: str | None = None
    turn_id: str | None = None
    provider_message_id: str | None = None
    provider_timeline_item_id: str | None = None
    #: ``revert_token`` as JSON text (``"null"`` for a null one), None when the row has none
    revert_token_json: str | None = None
    #: ``extra`` as JSON text, None when the row has none
    extra_json: str | None = None
    #: the row's version and the update that wrote it (an instance file's); None for a row never updated
    revision: int | None = None
    update_seq: int | None = None
    #: ``item`` as JSON text, when the reader has it (encoded once)
    item_json: str | None = None


def read_row(row: Any, cls: type = ReadRow, **values: Any) -> Any:
    """``row`` (``Row`` or a ``variant``) as ``cls``; ``values`` give or replace fields."""
    return cls(**{"seq": row.seq, "item": row.item, **row_keys(row), **values})


#: What each key must be, in the importers' words.
MUST_BE = {
    "seq": "a positive integer",
    "committed_at": "an ISO 8601 time",
    "item": "a JSON object",
    "item_id": f"null or a string of 1 to {MAX_ITEM_ID_LENGTH} characters",
    "item_type": f"a string of 1 to {MAX_ITEM_TYPE_LENGTH} characters",
    "extra": "a JSON object",
    "revision": "a positive integer",
    "update_seq": "a positive integer",
    **dict.fromkeys(RowKeys.__struct_fields__[:3], f"null or a string of 1 to {MAX_ROW_KEY_LENGTH} characters"),
}
_AT = re.compile(r" - at `\$\.(\w+)")


def problem(exc: msgspec.ValidationError, sent: dict, shape: type = Row, **must_be: str) -> tuple[str, str]:
    """``(key, message)`` for a row ``sent`` that ``shape`` refused: the key as ``sent`` spells it and what
    it must be (``"seq must be a positive integer, not 0"``; ``must_be`` words a reader's own keys);
    ``""`` for the row itself."""
    text = str(exc)
    if text.startswith("Object missing required field `"):
        key = text.split("`")[1]
        return key, f"{key} is required"
    match = _AT.search(text)
    if match is None:
        return "", text
    key = match[1]
    name = next((f.name for f in msgspec.structs.fields(shape) if f.encode_name == key), key)
    return key, f"{key} must be {must_be.get(name) or MUST_BE.get(name, 'valid')}, not {sent.get(key)!r}"
