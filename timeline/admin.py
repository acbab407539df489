"""Timeline rows in the admin: read-only for everyone, superusers included.

Committed history changes only through the timeline's services (an update keeps
the earlier version, shown on the row's page below), so there is no add, change
or delete here (the agent's timeline page is ``timeline.console.timeline_page``, its
entries ``timeline.console.entries``). ``agent_timeline_section`` links to that page from
the bottom of the agent's change page, and ``count_rows_deleted_with``
the row count on a project's, workspace's or agent's delete confirmation;
``TimelineConfig.ready()`` registers both with the apps below, which do not
import the timeline.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import QueryDict

from kernel.admin import ReadOnlyMixin
from registry.cascade import DeletionScope
from snapshots.models import AgentSnapshot
from timeline.models import ROW_FIELDS, TimelineRow, TimelineRowRevision

#: The template the agent's change page includes, with ``agent_timeline_section``'s variables.
AGENT_TIMELINE_TEMPLATE = "admin/timeline/timeline.html"


def agent_timeline_section(agent: AgentSnapshot, params: QueryDict) -> dict[str, Any]:
    """The variables of the agent page's timeline section (``snapshots.admin.register_agent_page_section``):
    a link to the timeline's own page (``timeline.console.timeline_page``), not the rows themselves."""
    return {"timeline_rows": agent.timeline_head.committed_rows}


#: The path from a timeline row to the records a hard delete starts from.
_ROW_LOOKUP = {"projects": "agent__workspace__project__in", "workspaces": "agent__workspace__in", "agents": "agent__in"}


def count_rows_deleted_with(scope: DeletionScope) -> int:
    """The timeline rows a hard delete of ``scope`` removes (``registry.cascade.DeletionCounter``)."""
    return TimelineRow.objects.filter(**{_ROW_LOOKUP[scope.kind]: scope.ids}).count()


class EarlierVersionsInline(ReadOnlyMixin, admin.TabularInline):
    """A row's earlier versions, oldest first: what each update replaced (``timeline.writes.revisions``)."""

    model = TimelineRowRevision
    fk_name = "row"
    verbose_name_plural = "earlier versions"
    fields = ["revision", "update_seq", "committed_at", "replaced_at", "item", "turn_id", "revert_token"]
    readonly_fields = fields
    ordering = ["revision"]


@admin.register(TimelineRow)
class TimelineRowAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["agent_id", "seq", "item_type", "item_id", "committed_at", "revision_shown"]
    inlines = [EarlierVersionsInline]
    search_fields = ["=agent__agent_id", "=item_id"]
    fields = ["agent", *ROW_FIELDS, "revision_shown"]
    # Counting a long history twice per page buys nothing.
    show_full_result_count = False

    @admin.display(description="revision")
    def revision_shown(self, obj: TimelineRow) -> int:
        return obj.current_revision
