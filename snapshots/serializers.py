from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from kernel.api.serializers import (
    ApiModelSerializer,
    OffsetDateTimeField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictInputSerializer,
    id_field,
)
from registry.directories import DIRECTORY_PATTERN, MAX_DIRECTORY_LENGTH
from registry.serializers import AgentCountsSerializer
from snapshots.models import (
    AGENT_ID_RE,
    DOT_SEGMENT_IDS,
    DOT_SEGMENT_MESSAGE,
    AgentSnapshot,
    AttentionReason,
    Lifecycle,
)
from snapshots.selectors import TIMELINE_HEAD


@extend_schema_field({"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$", "maxLength": 128})
class AgentIdField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=128, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not AGENT_ID_RE.fullmatch(value):
            raise serializers.ValidationError(
                "An agent id is 1 to 128 characters of letters, digits, '.', '_', ':' and '-'."
            )
        if value in DOT_SEGMENT_IDS:
            raise serializers.ValidationError(DOT_SEGMENT_MESSAGE)
        return value


@extend_schema_field({"type": "string", "pattern": f"(?:{DIRECTORY_PATTERN})|^$", "maxLength": MAX_DIRECTORY_LENGTH})
class CwdField(StrictCharField):
    """An absolute directory, or empty for unknown: ``normalize_directory``'s rule, stated in the schema."""


def labels_field(**kwargs) -> serializers.DictField:
    return serializers.DictField(
        child=StrictCharField(allow_blank=True, trim_whitespace=False),
        help_text="A map of strings to strings.",
        **kwargs,
    )


def json_object_field(**kwargs) -> serializers.DictField:
    return serializers.DictField(help_text="A JSON object, stored as given.", **kwargs)


class AgentSerializer(ApiModelSerializer):
    """An agent as ``snapshots.selectors.agents_for_api`` reads it: with its timeline head
    (``TIMELINE_HEAD``) and its last sign of life (``seen_at``) in the same query."""

    workspace_id = serializers.IntegerField(read_only=True)
    last_activity_at = OffsetDateTimeField(
        source=f"{TIMELINE_HEAD}.last_activity_at",
        read_only=True,
        allow_null=True,
        help_text="When the agent's newest timeline row was committed.",
    )
    last_user_message_at = OffsetDateTimeField(
        source=f"{TIMELINE_HEAD}.last_user_message_at",
        read_only=True,
        allow_null=True,
        help_text="When its newest user message was committed.",
    )
    last_seen_at = OffsetDateTimeField(
        source="seen_at",
        read_only=True,
        allow_null=True,
        help_text="Its last sign of life: its creation, an update, a heartbeat or an append of its own.",
    )
    head_seq = serializers.IntegerField(
        source=f"{TIMELINE_HEAD}.head_seq", read_only=True, help_text="The last committed seq (0 when none)."
    )
    min_seq = serializers.IntegerField(
        source=f"{TIMELINE_HEAD}.min_seq",
        read_only=True,
        help_text="The first retained seq (head_seq + 1 when none is retained).",
    )
    timeline_epoch = serializers.CharField(
        source=f"{TIMELINE_HEAD}.epoch", read_only=True, help_text="Changes only when the history is replaced."
    )
    timeline_rows = serializers.IntegerField(
        source=f"{TIMELINE_HEAD}.committed_rows",
        read_only=True,
        help_text="Committed timeline rows the agent holds now.",
    )
    timeline_bytes = serializers.IntegerField(
        source=f"{TIMELINE_HEAD}.committed_bytes",
        read_only=True,
        help_text="Their items' size, counted as compact UTF-8 JSON.",
    )
    stale = serializers.BooleanField(
        source="is_stale",
        read_only=True,
        help_text="Running or initializing, and no append, update or heartbeat for `CHARTR_STALE_AFTER_SECONDS`.",
    )
    project_id = serializers.IntegerField(source="api_project_id", read_only=True)
    labels = labels_field(read_only=True)
    config = json_object_field(read_only=True)
    runtime_info = json_object_field(read_only=True)
    persistence = json_object_field(read_only=True)

    class Meta:
        model = AgentSnapshot
        fields = [
            "agent_id",
            "workspace_id",
            "project_id",
            "cwd",
            "provider",
            "title",
            "labels",
            "lifecycle",
            "stale",
            "last_mode_id",
            "config",
            "runtime_info",
            "persistence",
            "requires_attention",
            "attention_reason",
            "attention_at",
            "internal",
            "extra",
            "created_at",
            "updated_at",
            "last_activity_at",
            "last_user_message_at",
            "last_seen_at",
            "archived_at",
            "archive_operation",
            "version",
            "head_seq",
            "min_seq",
            "timeline_epoch",
            "timeline_rows",
            "timeline_bytes",
        ]
        read_only_fields = fields


class AgentCreateSerializer(StrictInputSerializer):
    workspace_id = id_field()
    agent_id = AgentIdField(
        required=False,
        help_text="1 to 128 of letters, digits, '.', '_', ':' and '-'. A UUID is generated when omitted.",
    )
    provider = StrictCharField(max_length=64)
    cwd = CwdField(
        max_length=MAX_DIRECTORY_LENGTH,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="The agent's own working directory (absolute): its workspace's directory or a folder below it.",
    )
    title = StrictCharField(max_length=512, required=False, allow_blank=True)
    labels = labels_field(required=False)
    lifecycle = StrictChoiceField(choices=Lifecycle.choices, required=False)
    config = json_object_field(required=False)
    runtime_info = json_object_field(required=False)
    persistence = json_object_field(required=False)
    internal = StrictBooleanField(required=False)


class AgentRegisterSerializer(StrictInputSerializer):
    """What a daemon knows of an agent it owns; the agent id is in the path."""

    provider = StrictCharField(max_length=64)
    cwd = CwdField(
        max_length=MAX_DIRECTORY_LENGTH,
        trim_whitespace=False,
        help_text="The agent's working directory (absolute): it is placed in the deepest workspace at or above it, "
        "else in a new `checkout` workspace (and `directory` project) there.",
    )
    title = StrictCharField(max_length=512, required=False, allow_blank=True)
    labels = labels_field(required=False)
    lifecycle = StrictChoiceField(choices=Lifecycle.choices, required=False)
    config = json_object_field(required=False)
    runtime_info = json_object_field(required=False)
    persistence = json_object_field(required=False)
    internal = StrictBooleanField(required=False)


class AgentUpdateSerializer(StrictInputSerializer):
    """Every field optional; send only what changes. ``null`` clears text and JSON fields."""

    provider = StrictCharField(max_length=64)
    title = StrictCharField(max_length=512, allow_blank=True, allow_null=True)
    labels = labels_field(allow_null=True)
    lifecycle = StrictChoiceField(choices=Lifecycle.choices)
    last_mode_id = StrictCharField(max_length=128, allow_blank=True, allow_null=True)
    config = json_object_field(allow_null=True)
    runtime_info = json_object_field(allow_null=True)
    persistence = json_object_field(allow_null=True)
    requires_attention = StrictBooleanField()
    attention_reason = StrictChoiceField(choices=AttentionReason.choices, allow_null=True)
    attention_at = OffsetDateTimeField(allow_null=True)
    internal = StrictBooleanField()


class AgentArchiveSerializer(serializers.Serializer):
    agent = AgentSerializer()
    archived = AgentCountsSerializer()


class AgentUnarchiveSerializer(serializers.Serializer):
    agent = AgentSerializer()
    restored = AgentCountsSerializer()
