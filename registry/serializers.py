from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from kernel.api.serializers import (
    ApiModelSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictInputSerializer,
    id_field,
)
from registry.directories import DIRECTORY_PATTERN, MAX_DIRECTORY_LENGTH, normalize_directory
from registry.models import Project, ProjectKind, Workspace, WorkspaceKind


class ArchivedCountsSerializer(serializers.Serializer):
    workspaces = serializers.IntegerField(min_value=0)
    agents = serializers.IntegerField(min_value=0)


class AgentCountsSerializer(serializers.Serializer):
    """How many agents an archive took or an unarchive restored."""

    agents = serializers.IntegerField(min_value=0)


@extend_schema_field({"type": "string", "pattern": DIRECTORY_PATTERN, "maxLength": MAX_DIRECTORY_LENGTH})
class DirectoryField(StrictCharField):
    """Checked by ``normalize_directory``; the schema states the same rule as a pattern."""


def directory_field() -> serializers.CharField:
    # Not trimmed: " /a" is refused as relative rather than quietly becoming "/a".
    return DirectoryField(
        max_length=MAX_DIRECTORY_LENGTH,
        trim_whitespace=False,
        help_text="An absolute path. Redundant and trailing slashes are folded away; '.' and '..' are refused.",
    )


def default_display_name_field() -> serializers.CharField:
    return StrictCharField(
        max_length=255,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="Defaults to the directory's last segment.",
    )


class DirectoryInputMixin:
    def validate_directory(self, value: str) -> str:
        try:
            return normalize_directory(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class GrowthStatsSerializer(serializers.Serializer):
    """Counters kept by the services, summed over the agents: never a count over the history."""

    agents = serializers.IntegerField(source="stats_agents", read_only=True, help_text="Agents, archived ones too.")
    timeline_rows = serializers.IntegerField(source="stats_timeline_rows", read_only=True)
    timeline_bytes = serializers.IntegerField(
        source="stats_timeline_bytes", read_only=True, help_text="Items' size as compact UTF-8 JSON."
    )


class ProjectSerializer(ApiModelSerializer):
    stats = GrowthStatsSerializer(source="*", read_only=True)

    class Meta:
        model = Project
        fields = [
            "id",
            "directory",
            "display_name",
            "kind",
            "git_remote",
            "extra",
            "created_at",
            "updated_at",
            "archived_at",
            "archive_operation",
            "stats",
        ]
        read_only_fields = fields


class ProjectCreateSerializer(DirectoryInputMixin, StrictInputSerializer):
    directory = directory_field()
    kind = StrictChoiceField(choices=ProjectKind.choices)
    display_name = default_display_name_field()
    git_remote = StrictCharField(max_length=2048, required=False, allow_blank=True, allow_null=True)


class ProjectUpdateSerializer(StrictInputSerializer):
    display_name = StrictCharField(max_length=255)
    git_remote = StrictCharField(max_length=2048, allow_blank=True, allow_null=True)


class ProjectArchiveSerializer(serializers.Serializer):
    project = ProjectSerializer()
    archived = ArchivedCountsSerializer()


class ProjectUnarchiveSerializer(serializers.Serializer):
    project = ProjectSerializer()
    restored = ArchivedCountsSerializer()


class WorkspaceSerializer(ApiModelSerializer):
    project_id = serializers.IntegerField(read_only=True)
    stats = GrowthStatsSerializer(source="*", read_only=True)

    class Meta:
        model = Workspace
        fields = [
            "id",
            "project_id",
            "directory",
            "display_name",
            "kind",
            "branch",
            "worktree_root",
            "extra",
            "created_at",
            "updated_at",
            "archived_at",
            "archive_operation",
            "stats",
        ]
        read_only_fields = fields


class WorkspaceCreateSerializer(DirectoryInputMixin, StrictInputSerializer):
    project_id = id_field()
    directory = directory_field()
    kind = StrictChoiceField(choices=WorkspaceKind.choices)
    display_name = default_display_name_field()
    branch = StrictCharField(max_length=255, required=False, allow_blank=True, allow_null=True)


class WorkspaceUpdateSerializer(StrictInputSerializer):
    display_name = StrictCharField(max_length=255)
    branch = StrictCharField(max_length=255, allow_blank=True, allow_null=True)


class WorkspaceArchiveSerializer(serializers.Serializer):
    workspace = WorkspaceSerializer()
    archived = AgentCountsSerializer()


class WorkspaceUnarchiveSerializer(serializers.Serializer):
    workspace = WorkspaceSerializer()
    restored = AgentCountsSerializer()
