from __future__ import annotations

import django_filters

from kernel.api.filters import ArchivedFilterSet, IdFilter, StrictBooleanFilter
from snapshots.models import AgentSnapshot, Lifecycle


class AgentFilter(ArchivedFilterSet):
    workspace_id = IdFilter(field_name="workspace_id")
    project_id = IdFilter(field_name="workspace__project_id")
    lifecycle = django_filters.ChoiceFilter(choices=Lifecycle.choices)
    requires_attention = StrictBooleanFilter(field_name="requires_attention")
    provider = django_filters.CharFilter(field_name="provider", max_length=64)
    stale = StrictBooleanFilter(
        field_name="is_stale",
        help_text="`true`: running or initializing agents silent for `CHARTR_STALE_AFTER_SECONDS`; `false`: the others.",
    )

    class Meta:
        model = AgentSnapshot
        fields = ["workspace_id", "project_id", "lifecycle", "requires_attention", "provider", "stale", "archived"]
