"""The timeline API's wire shapes: one msgspec ``Struct`` per shape, in and out.

Requests are validated against them (unknown keys refused: ``forbid_unknown_fields``), answers
are encoded from them, and the OpenAPI document is generated from them (kernel/api/plain_schema.py).
A row's own keys are timeline/rows.py's; items are checked by the services (timeline/items.py), their
schema is ``TimelineItem`` (timeline/api/schema.py). No rules live here.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
from django.utils import timezone

from kernel.api.parsers import NOT_ONLY_WHITESPACE
from kernel.api.serializers import INT64_MAX as MAX_SEQ
from timeline.models import EPOCH_MAX_LENGTH
from timeline.rows import ITEM_REF, CommitTime, Item, ItemId, RowKeys
from timeline.selectors import DEFAULT_READ_LIMIT, MAX_READ_LIMIT
from timeline.services import MAX_ITEMS_PER_APPEND

Seq = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQ)]
Timestamp = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
#: An item as answered: the stored JSON text passed through (``msgspec.Raw``), or a merged item.
StoredItem = Annotated[msgspec.Raw, msgspec.Meta(extra_json_schema=ITEM_REF)]


#: The zones in which a UTC time is written ``+00:00``: ``astimezone`` into them changes nothing written.
UTC_ZONES = frozenset({dt.UTC, zoneinfo.ZoneInfo("UTC")})


def timestamp_renderer() -> Callable[[dt.datetime | None], str | None]:
    """``render_timestamp`` with the current zone looked up once, for the many times of one answer."""
    zone = timezone.get_current_timezone()
    utc = zone in UTC_ZONES

    def render(value: dt.datetime | None) -> str | None:
        if value is None:
            return None
        if utc and value.tzinfo in UTC_ZONES:
            return value.isoformat()  # the usual case: converting would change nothing written
        if timezone.is_naive(value):
            value = timezone.make_aware(value, zone)
        return value.astimezone(zone).isoformat()

    return render


def render_timestamp(value: dt.datetime | None) -> str | None:
    """ISO 8601 with an explicit offset (``+00:00``, never ``Z``) in the current time zone:
    every timeline timestamp, in pages, appends and on the live stream alike."""
    return timestamp_renderer()(value)


# --- in -----------------------------------------------------------------------


class NewItem(RowKeys, forbid_unknown_fields=True, kw_only=True):
    committed_at: (
        Annotated[CommitTime, msgspec.Meta(description="The row's commit time (Paseo's timestamp); default now.")]
        | None
    ) = None
    item: Item
    item_id: (
        Annotated[
            ItemId,
            msgspec.Meta(
                description="Optional client key, unique per agent; a retry with the same key is not stored twice."
            ),
        ]
        | None
    ) = None


class AppendRequest(msgspec.Struct, forbid_unknown_fields=True):
    items: Annotated[list[NewItem], msgspec.Meta(min_length=1, max_length=MAX_ITEMS_PER_APPEND)]
    expected_head_seq: Seq | None = None


class ProvisionalItem(msgspec.Struct, forbid_unknown_fields=True):
    """The same item an append takes (unknown and duplicate keys refused alike), not stored."""

    item: Item
    item_id: (
        Annotated[
            ItemId, msgspec.Meta(description="Optional key matching the committed row that will replace this update.")
        ]
        | None
    ) = None


class ReadQuery(msgspec.Struct, forbid_unknown_fields=True):
    direction: Literal["tail", "before", "after"] = "tail"
    seq: (
        Annotated[
            Seq,
            msgspec.Meta(
                description="The cursor for `before`/`after` (exclusive). Without it, `after` reads from the start "
                "and `before` from the head; `tail` ignores it."
            ),
        ]
        | None
    ) = None
    limit: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            le=MAX_READ_LIMIT,
            description="Rows per page; 0 reads every row of the window (up to CHARTR_TIMELINE_READ_ALL_MAX_ROWS, "
            "else 400 too_many_rows).",
        ),
    ] = DEFAULT_READ_LIMIT
    epoch: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=EPOCH_MAX_LENGTH, pattern=NOT_ONLY_WHITESPACE)] | None
    ) = None
    projection: Literal["canonical", "projected"] = "canonical"


#: An RFC 3339 time with its offset, in years no offset can carry out of a datetime's range.
COMMIT_TIME_PATTERN = (
    r"^(19[7-9][0-9]|2[0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


class RowUpdateRequest(RowKeys, forbid_unknown_fields=True, kw_only=True):
    """A committed row's new content (Paseo's ``updateCommittedRow``): its seq stays. The keys left out
    are the row's no longer (no turn, no provider ids, no revert token), but ``committed_at``, which stays."""

    item: Item
    committed_at: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=64,
                pattern=COMMIT_TIME_PATTERN,
                description="The new commit time (RFC 3339, years 1970 to 2999); left out, it stays.",
                extra_json_schema={"format": "date-time"},
            ),
        ]
        | None
    ) = None


# --- out ----------------------------------------------------------------------


class CommittedRowRef(msgspec.Struct):
    seq: int
    committed_at: Timestamp
    item_id: str | None


class AppendResponse(msgspec.Struct):
    rows: list[CommittedRowRef]
    head_seq: int
    epoch: str


class ProvisionalAccepted(msgspec.Struct):
    agent_id: str
    item_id: str | None


class StreamTicketMinted(msgspec.Struct):
    """A stream ticket: opens ``stream_url`` (the agent's stream with ``?ticket=``) once, within ``expires_in`` s."""

    ticket: str
    agent_id: str
    expires_at: Timestamp
    expires_in: int
    stream_url: str


class CanonicalRow(msgspec.Struct, kw_only=True):
    """One committed row, as stored (``projection=canonical`` and the stream's ``committed`` events)."""

    seq: Annotated[int, msgspec.Meta(ge=1)]
    committed_at: Timestamp
    item_type: str
    item: StoredItem
    item_id: str | None
    turn_id: Annotated[str | None, msgspec.Meta(description="The turn (Paseo's turnId), or null.")]
    provider_message_id: Annotated[str | None, msgspec.Meta(description="Paseo's providerMessageId, or null.")]
    provider_timeline_item_id: Annotated[
        str | None, msgspec.Meta(description="Paseo's providerTimelineItemId, or null.")
    ]
    extra: Annotated[
        msgspec.Raw,
        msgspec.Meta(
            description="Keys the row came with that chartr does not model (an import's).",
            extra_json_schema={"type": "object", "additionalProperties": True},
        ),
    ]
    revision: Annotated[
        int,
        msgspec.Meta(ge=1, description="The row's version: 1 as committed, one more for each update that changed it."),
    ]
    revert_token: (
        Annotated[
            msgspec.Raw,
            msgspec.Meta(
                description="Paseo's revertToken (any JSON value; null is a null token). "
                "Left out when the row has none."
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET


SeqRange = Annotated[list[Annotated[int, msgspec.Meta(ge=1)]], msgspec.Meta(min_length=2, max_length=2)]


class ProjectedEntry(msgspec.Struct):
    """One entry of ``projection=projected``: the rows folded into one item (Paseo's projection), or one row."""

    seq_start: Annotated[int, msgspec.Meta(ge=1, description="Its first row's seq: where it shows.")]
    seq_end: Annotated[int, msgspec.Meta(ge=1, description="Its last row's seq.")]
    source_seq_ranges: Annotated[
        list[SeqRange], msgspec.Meta(description="The runs [first, last] of the seqs folded into it, ascending.")
    ]
    committed_at: Annotated[Timestamp, msgspec.Meta(description="The last folded row's.")]
    item_type: str
    item: StoredItem
    item_ids: Annotated[list[str | None], msgspec.Meta(description="The folded rows' item_id, in fold order.")]
    turn_id: str | None
    collapsed: Annotated[
        list[Literal["tool_lifecycle", "assistant_merge", "reasoning_merge", "identity"]],
        msgspec.Meta(description="How rows were folded into it (Paseo's `collapsed`); empty for one row."),
    ]


class Window(msgspec.Struct):
    """The bounds of the whole timeline (what is retained), not of the page."""

    min_seq: Annotated[int, msgspec.Meta(description="The first retained seq (0 when none is retained).")]
    max_seq: Annotated[int, msgspec.Meta(description="The last committed seq: head_seq (0 for an empty history).")]
    next_seq: Annotated[int, msgspec.Meta(description="The seq the next committed row will get (head_seq + 1).")]


#: ``rows`` holds either shape; msgspec documents a union of Structs only when tagged, so the
#: ``oneOf`` is named here and written by kernel/api/plain_schema.py.
ROW_OR_ENTRY = ("TimelineRowOrEntry", (CanonicalRow, ProjectedEntry))


class TimelinePage(msgspec.Struct):
    agent_id: str
    epoch: str
    direction: str
    rows: Annotated[
        list[Any],
        msgspec.Meta(
            description="Canonical rows, or projected entries with `projection=projected`.",
            extra_json_schema={"items": {"$ref": "#/components/schemas/TimelineRowOrEntry"}},
        ),
    ]
    window: Window
    has_older: bool
    has_newer: bool
    reset: Annotated[
        bool,
        msgspec.Meta(
            description="True when your cursor cannot be continued (stale_cursor or gap): drop what you hold."
        ),
    ]
    stale_cursor: Annotated[
        bool, msgspec.Meta(description="True when the epoch you sent is not the agent's; rows are then a fresh tail.")
    ]
    gap: Annotated[
        bool,
        msgspec.Meta(
            description="True when the after cursor lies below window.min_seq - 1: the rows it needs are no longer "
            "retained; rows then start at window.min_seq."
        ),
    ]
    holes: Annotated[
        list[SeqRange],
        msgspec.Meta(
            description="The missing seq ranges [first, last] between the cursor and the page's far end: only an "
            "imported history whose seqs had holes has any, and its rows keep their own seqs."
        ),
    ]
    backfilling: Annotated[
        bool,
        msgspec.Meta(
            description="True while a backfill is under way (POST .../timeline/backfill until .../backfill/complete): "
            "the rows are a replay in progress, not yet the whole conversation."
        ),
    ]
    start_seq: Annotated[
        int | None,
        msgspec.Meta(
            description="The first seq of the canonical rows the page covers (null when it covers none). A projected "
            "entry that overlaps them is answered whole, so its seq_start may lie before start_seq (a cursor inside a "
            "message still gets the whole message, as Paseo's selectProjectedTimelinePage answers)."
        ),
    ] = None
    end_seq: Annotated[
        int | None,
        msgspec.Meta(description="The last seq of the canonical rows the page covers (null when it covers none)."),
    ] = None


class UserMessageMatches(msgspec.Struct):
    """The committed ``user_message`` rows whose ``messageId``, trimmed, is the one asked for."""

    message_id: Annotated[str, msgspec.Meta(description="The id asked for, trimmed.")]
    texts: Annotated[
        list[str],
        msgspec.Meta(description="Their texts, oldest first (Paseo's hasCommittedUserMessage compares one of them)."),
    ]


class LastItem(msgspec.Struct):
    """The newest committed row's seq and item (Paseo's ``getLastItem``); both null for an empty timeline."""

    seq: Annotated[int, msgspec.Meta(ge=1)] | None
    item: StoredItem | None


class LastAssistantMessage(msgspec.Struct):
    """The newest assistant message, its chunks joined (Paseo's ``getLastAssistantMessage``); nulls when none."""

    text: str | None
    seq_start: Annotated[int | None, msgspec.Meta(description="Its first chunk's seq.")]
    seq_end: Annotated[int | None, msgspec.Meta(description="Its last chunk's seq.")]
