"""The two timeline endpoints' JSON in and out, without DRF's per-field work.

A page of 100 rows or a one-item append spent more time in DRF's serializers
(building fields, validating, rendering each value) and in decoding and
re-encoding every stored item than in the database (docs/benchmarks.md). Here:

* **in**: a request that is plainly well formed (the usual case) is read
  directly; anything else goes through the DRF serializer as before, so every
  refusal (400, its ``fields`` and messages) still comes from that one
  declaration, which also documents the API. What the direct reading accepts
  it reads into exactly what the serializer gives (tests/timeline/test_api_json.py);
* **out**: the response is written once with orjson (``kernel.fastjson``),
  each stored item passed through as the JSON text the database holds.
  The content is what DRF's renderer wrote before; the item's bytes are the
  stored text (SQLite keeps ``json.dumps``' spacing and ``\\uXXXX`` escapes,
  PostgreSQL prints ``jsonb``), the same JSON values either way.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping

import orjson
from django.http import HttpResponse
from django.utils import timezone

from kernel import fastjson
from timeline import serializers
from timeline.selectors import DEFAULT_READ_LIMIT, MAX_READ_LIMIT, TimelinePage
from timeline.services import MAX_ITEMS_PER_APPEND, AppendResult, NewTimelineItem

READ_QUERY_KEYS = frozenset({"direction", "seq", "limit", "epoch", "projection"})
DIRECTIONS = frozenset({"tail", "before", "after"})
PROJECTIONS = frozenset({"canonical", "projected"})
INTEGER_BOUNDS = {"seq": (0, serializers.MAX_SEQ), "limit": (1, MAX_READ_LIMIT)}
#: The longest decimal a seq or limit can be spelt with (INT64_MAX has 19 digits).
MAX_INT_DIGITS = 19
# Read off the serializers that declare them, so the direct reading never drifts from the declaration.
EPOCH_MAX_LENGTH = serializers.ReadQuerySerializer().fields["epoch"].max_length
ITEM_ID_MAX_LENGTH = serializers.NewItemSerializer().fields["item_id"].max_length
#: The zones in which a UTC time is written ``+00:00``: ``astimezone`` into them changes nothing written.
UTC_ZONES = frozenset({dt.UTC, zoneinfo.ZoneInfo("UTC")})
APPEND_KEYS = frozenset({"items", "expected_head_seq"})
NEW_ITEM_KEYS = frozenset({"item", "item_id"})


# --- in -----------------------------------------------------------------------


def read_arguments(query_params) -> dict:
    """The read's keyword arguments for ``read_timeline``; a 400 (DRF's) when the query is wrong."""
    arguments = _plain_read_query(query_params)
    if arguments is None:
        query = serializers.ReadQuerySerializer(data=query_params)
        query.is_valid(raise_exception=True)
        arguments = dict(query.validated_data)
    return arguments


def _plain_read_query(query_params) -> dict | None:
    """The arguments of a query every parameter of which is given once and plainly valid, or None."""
    if not READ_QUERY_KEYS.issuperset(query_params.keys()):
        return None
    arguments: dict = {"direction": "tail", "limit": DEFAULT_READ_LIMIT, "projection": "canonical"}
    for name, values in query_params.lists():
        if len(values) != 1:
            return None
        value = values[0]
        if name == "direction" and value in DIRECTIONS or name == "projection" and value in PROJECTIONS:
            arguments[name] = value
        elif name in INTEGER_BOUNDS and value.isascii() and value.isdigit() and len(value) <= MAX_INT_DIGITS:
            lowest, highest = INTEGER_BOUNDS[name]
            if not lowest <= int(value) <= highest:
                return None
            arguments[name] = int(value)
        elif name == "epoch" and 0 < len(value) <= EPOCH_MAX_LENGTH and value == value.strip() and "\x00" not in value:
            arguments[name] = value
        else:
            return None
    return arguments


def append_arguments(data) -> tuple[list[NewTimelineItem], int | None]:
    """The append's items and ``expected_head_seq``; a 400 (DRF's) when the body is wrong."""
    plain = _plain_append_body(data)
    if plain is not None:
        return plain
    body = serializers.AppendRequestSerializer(data=data)
    body.is_valid(raise_exception=True)
    items = [NewTimelineItem(item=i["item"], item_id=i.get("item_id")) for i in body.validated_data["items"]]
    return items, body.validated_data.get("expected_head_seq")


def _plain_append_body(data) -> tuple[list[NewTimelineItem], int | None] | None:
    """The items of a body in the plain shape (object items, string ids, an integer head), or None."""
    if type(data) is not dict or "items" not in data or not APPEND_KEYS.issuperset(data):
        return None
    entries = data["items"]
    expected = data.get("expected_head_seq")
    if type(entries) is not list or not 1 <= len(entries) <= MAX_ITEMS_PER_APPEND:
        return None
    if expected is not None and (type(expected) is not int or not 0 <= expected <= serializers.MAX_SEQ):
        return None
    items = []
    for entry in entries:
        if type(entry) is not dict or not NEW_ITEM_KEYS.issuperset(entry):
            return None
        item = entry.get("item")
        item_id = entry.get("item_id")
        if type(item) is not dict:
            return None
        if item_id is not None and (
            type(item_id) is not str or not 0 < len(item_id) <= ITEM_ID_MAX_LENGTH or "\x00" in item_id
        ):
            return None
        items.append(NewTimelineItem(item=item, item_id=item_id))
    return items, expected


# --- out ----------------------------------------------------------------------


def json_response(document: Mapping, *, status: int = 200) -> HttpResponse:
    return HttpResponse(fastjson.dumps_like_drf(document), status=status, content_type="application/json")


def page_document(page: TimelinePage) -> dict:
    """The page as ``TimelinePageSerializer`` documents it, stored items as ``orjson.Fragment``."""
    zone = timezone.get_current_timezone()
    render = _timestamp_renderer(zone)
    if page.items_as_json:
        rows = _rows_with_stored_items(page.rows, render, utc=zone in UTC_ZONES)
    else:
        rows = [{**row, "committed_at": render(row["committed_at"])} for row in page.rows]
    return {
        "agent_id": page.agent_id,
        "epoch": page.epoch,
        "direction": page.direction,
        "rows": rows,
        "window": page.retained.window(),
        "has_older": page.has_older,
        "has_newer": page.has_newer,
        "reset": page.reset,
        "stale_cursor": page.stale_cursor,
        "gap": page.gap,
    }


def _rows_with_stored_items(rows: list[dict], render, *, utc: bool) -> list[dict]:
    """The rows with each item as its stored text, and each time as ``render`` writes it.

    Rendering a time in Python (``astimezone``, ``isoformat``, the call) cost more than
    reading the page (docs/benchmarks.md). In UTC (``utc``: the current
    zone is one), the usual zone, a time stored in UTC is left to orjson, which writes
    an aware datetime as ``isoformat()`` does (``+00:00``, microseconds only when there
    are any). Only this document takes it: its items are fragments, so ``dumps_like_drf``
    never falls back to ``json`` (which cannot write a datetime) for it.

    The rows are changed in place: a page whose items are JSON text is read for one
    answer and goes nowhere else, and copying its 100 dicts cost more than building
    the rest of the document (docs/benchmarks.md).
    """
    fragment = orjson.Fragment
    datetime_type = dt.datetime
    for row in rows:
        at = row["committed_at"]
        if not (utc and at.__class__ is datetime_type and at.tzinfo in UTC_ZONES):
            row["committed_at"] = render(at)
        row["item"] = fragment(row["item"])
    return rows


def append_document(result: AppendResult) -> dict:
    """The append's answer as ``AppendResponseSerializer`` documents it."""
    render = _timestamp_renderer()
    return {
        "rows": [
            {
                "seq": row.seq,
                "committed_at": render(row.committed_at),
                "item_id": None if row.item_id is None else str(row.item_id),
            }
            for row in result.rows
        ],
        "head_seq": result.head_seq,
        "epoch": str(result.epoch),
    }


def _timestamp_renderer(zone=None):
    """``OffsetDateTimeField``'s rendering with the current zone (or ``zone``) looked up once (it looks it
    up per value)."""
    if zone is None:
        zone = timezone.get_current_timezone()

    def render(value):
        if value is None or value.tzinfo is None:
            return serializers.render_timestamp(value)  # DRF's rules for a naive time, rare enough to take its path
        return value.astimezone(zone).isoformat()

    return render
