"""Input validation and output rendering for the timeline API. No rules live here."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from kernel.api.serializers import (
    INT64_MAX,
    OffsetDateTimeField,
    QueryIntegerField,
    StrictCharField,
    StrictInputSerializer,
    StrictIntegerField,
)
from snapshots.models import MAX_EPOCH_LENGTH
from timeline.selectors import DEFAULT_READ_LIMIT, MAX_READ_LIMIT
from timeline.services import MAX_ITEMS_PER_APPEND

MAX_SEQ = INT64_MAX

#: How every timeline timestamp is rendered, in pages and on the live stream alike.
render_timestamp = OffsetDateTimeField().to_representation


@extend_schema_field({"$ref": "#/components/schemas/TimelineItem"})
class TimelineItemField(serializers.JSONField):
    """An item: the schema is built from timeline/items.py by timeline/schema.py; services check it."""


class NewItemSerializer(StrictInputSerializer):
    item = TimelineItemField(help_text="A JSON object with a string `type`; known types have required fields.")
    item_id = StrictCharField(
        required=False,
        allow_null=True,
        max_length=256,
        trim_whitespace=False,
        help_text="Optional client key, unique per agent; a retry with the same key is not stored twice.",
    )


class AppendRequestSerializer(StrictInputSerializer):
    items = NewItemSerializer(many=True, min_length=1, max_length=MAX_ITEMS_PER_APPEND)
    expected_head_seq = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_SEQ)


class CommittedRowRefSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    committed_at = OffsetDateTimeField()
    item_id = serializers.CharField(allow_null=True)


class AppendResponseSerializer(serializers.Serializer):
    rows = CommittedRowRefSerializer(many=True)
    head_seq = serializers.IntegerField()
    epoch = serializers.CharField()


class ReadQuerySerializer(StrictInputSerializer):
    direction = serializers.ChoiceField(choices=["tail", "before", "after"], default="tail")
    seq = QueryIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_SEQ,
        help_text="The cursor for `before`/`after` (exclusive). Without it, `after` reads from the start "
        "and `before` from the head; `tail` ignores it.",
    )
    limit = QueryIntegerField(required=False, default=DEFAULT_READ_LIMIT, min_value=1, max_value=MAX_READ_LIMIT)
    epoch = StrictCharField(required=False, max_length=MAX_EPOCH_LENGTH)
    projection = serializers.ChoiceField(choices=["canonical", "projected"], default="canonical")


class CanonicalRowSerializer(serializers.Serializer):
    """One committed row, as stored (``projection=canonical`` and the stream's ``committed`` events)."""

    seq = serializers.IntegerField(min_value=1)
    committed_at = OffsetDateTimeField()
    item_type = serializers.CharField()
    item = TimelineItemField()
    item_id = serializers.CharField(allow_null=True)
    turn_id = serializers.CharField(allow_null=True, help_text="The turn (Paseo's turnId), or null.")
    provider_message_id = serializers.CharField(allow_null=True, help_text="Paseo's providerMessageId, or null.")
    provider_timeline_item_id = serializers.CharField(
        allow_null=True, help_text="Paseo's providerTimelineItemId, or null."
    )
    revert_token = serializers.JSONField(
        allow_null=True, help_text="Paseo's revertToken (any JSON value), or null when the row has none."
    )
    extra = serializers.DictField(help_text="Keys the row came with that chartr does not model (an import's).")


class ProjectedEntrySerializer(serializers.Serializer):
    """One entry of ``projection=projected``: a run of rows merged, or one row, with its seq range."""

    seq_start = serializers.IntegerField(min_value=1)
    seq_end = serializers.IntegerField(min_value=1)
    committed_at = OffsetDateTimeField(help_text="The last merged row's.")
    item_type = serializers.CharField()
    item = TimelineItemField()
    item_ids = serializers.ListField(child=serializers.CharField(allow_null=True))


class WindowSerializer(serializers.Serializer):
    """The bounds of the whole timeline (what is retained), not of the page."""

    min_seq = serializers.IntegerField(help_text="The first retained seq (head_seq + 1 when none is retained).")
    max_seq = serializers.IntegerField(help_text="The last committed seq: head_seq (0 for an empty history).")
    next_seq = serializers.IntegerField(help_text="The seq the next committed row will get (head_seq + 1).")


class TimelinePageSerializer(serializers.Serializer):
    agent_id = serializers.CharField()
    epoch = serializers.CharField()
    direction = serializers.CharField()
    rows = PolymorphicProxySerializer(
        component_name="TimelineRowOrEntry",
        serializers=[CanonicalRowSerializer, ProjectedEntrySerializer],
        resource_type_field_name=None,
        many=True,
        help_text="Canonical rows, or projected entries with `projection=projected`.",
    )
    window = WindowSerializer()
    has_older = serializers.BooleanField()
    has_newer = serializers.BooleanField()
    reset = serializers.BooleanField(
        help_text="True when your cursor cannot be continued (stale_cursor or gap): drop what you hold."
    )
    stale_cursor = serializers.BooleanField(
        help_text="True when the epoch you sent is not the agent's; rows are then a fresh tail."
    )
    gap = serializers.BooleanField(
        help_text="True when the after cursor lies below window.min_seq - 1: the rows it needs are no longer "
        "retained; rows then start at window.min_seq."
    )

    holes = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=2, max_length=2),
        help_text="The missing seq ranges [first, last] between the cursor and the page's far end: only an "
        "imported history whose seqs had holes has any, and its rows keep their own seqs.",
    )

    # The fields above document the shape; timeline.api_json.page_document writes it, passing
    # each stored item through as the JSON text the database holds (docs/benchmarks.md).
