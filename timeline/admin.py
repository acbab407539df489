"""Timeline rows in the admin: read-only for everyone, superusers included.

Committed history changes only through the timeline's services (an update keeps
the earlier version, shown on the row's page below), so there is no add, change
or delete here. ``entry_for`` shapes a row for the agent's timeline page
(``timeline.admin_page``), ``agent_timeline_section`` links to that page from
the bottom of the agent's change page, and ``count_rows_deleted_with``
the row count on a project's, workspace's or agent's delete confirmation;
``TimelineConfig.ready()`` registers both with the apps below, which do not
import the timeline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin
from django.http import QueryDict

from registry.cascade import DeletionScope
from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow, TimelineRowRevision

#: A rendered text or JSON block is cut here; an item may be up to a MiB.
MAX_RENDERED_CHARS = 20_000
#: Longer texts show this many lines, the rest folded (``<details>``).
FOLD_AFTER_LINES = 20

TEXT_ITEM_TYPES = {"user_message", "assistant_message", "reasoning"}
KNOWN_ITEM_TYPES = TEXT_ITEM_TYPES | {"tool_call", "todo", "interaction", "error", "compaction"}


def _clip(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_RENDERED_CHARS:
        return text, False
    return text[:MAX_RENDERED_CHARS], True


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@dataclass
class TimelineEntry:
    """One row, shaped for its item type's template branch."""

    seq: int
    committed_at: Any
    item_type: str
    item_id: str | None
    #: Which rendering the template uses: an item type from KNOWN_ITEM_TYPES, or "generic".
    kind: str
    text: str = ""
    truncated: bool = False
    name: str = ""
    status: str = ""
    call_id: str = ""
    todo_items: list[tuple[str, str]] = field(default_factory=list)
    #: The rest of the item, as indented JSON.
    details: str = ""
    max_rendered_chars: int = MAX_RENDERED_CHARS

    @property
    def text_head(self) -> str:
        """The first ``FOLD_AFTER_LINES`` lines of ``text``, shown unfolded."""
        return "\n".join(self.text.split("\n")[:FOLD_AFTER_LINES])

    @property
    def text_rest(self) -> str:
        """The lines of ``text`` after the first ``FOLD_AFTER_LINES``, folded."""
        return "\n".join(self.text.split("\n")[FOLD_AFTER_LINES:])

    @property
    def folded_lines(self) -> int:
        return max(0, self.text.count("\n") + 1 - FOLD_AFTER_LINES)


def entry_for(row: TimelineRow) -> TimelineEntry:
    item = row.item if isinstance(row.item, dict) else {"value": row.item}
    kind = row.item_type if row.item_type in KNOWN_ITEM_TYPES else "generic"
    entry = TimelineEntry(
        seq=row.seq, committed_at=row.committed_at, item_type=row.item_type, item_id=row.item_id, kind=kind
    )
    shown: set[str] = {"type"}
    if kind in TEXT_ITEM_TYPES:
        entry.text, entry.truncated = _clip(_as_text(item.get("text", "")))
        shown.add("text")
    elif kind == "tool_call":
        entry.name = _as_text(item.get("name", ""))
        entry.status = _as_text(item.get("status", ""))
        entry.call_id = _as_text(item.get("callId", ""))
        shown |= {"name", "status", "callId"}
    elif kind == "todo":
        todos = item.get("items")
        for todo in todos if isinstance(todos, list) else []:
            if isinstance(todo, dict):
                label = todo.get("content", todo.get("text", todo.get("title", todo)))
                entry.todo_items.append((_clip(_as_text(label))[0], _as_text(todo.get("status", ""))))
            else:
                entry.todo_items.append((_clip(_as_text(todo))[0], ""))
        if isinstance(todos, list):
            shown.add("items")
    elif kind == "error":
        entry.text, entry.truncated = _clip(_as_text(item.get("message", "")))
        shown.add("message")
    elif kind == "compaction":
        entry.status = _as_text(item.get("status", ""))
        shown.add("status")
    elif kind == "interaction":
        entry.text, entry.truncated = _clip(_as_text(item.get("request", "")))
        shown.add("request")
    rest = {key: value for key, value in item.items() if key not in shown}
    if rest:
        entry.details, clipped = _clip(_as_text(rest))
        entry.truncated = entry.truncated or clipped
    return entry


#: The template the agent's change page includes, with ``agent_timeline_section``'s variables.
AGENT_TIMELINE_TEMPLATE = "admin/timeline/timeline.html"


def agent_timeline_section(agent: AgentSnapshot, params: QueryDict) -> dict[str, Any]:
    """The variables of the agent page's timeline section (``snapshots.admin.register_agent_page_section``):
    a link to the timeline's own page (``timeline.admin_page``), not the rows themselves."""
    return {"timeline_rows": agent.timeline_head.committed_rows}


#: The path from a timeline row to the records a hard delete starts from.
_ROW_LOOKUP = {"projects": "agent__workspace__project__in", "workspaces": "agent__workspace__in", "agents": "agent__in"}


def count_rows_deleted_with(scope: DeletionScope) -> int:
    """The timeline rows a hard delete of ``scope`` removes (``registry.cascade.DeletionCounter``)."""
    return TimelineRow.objects.filter(**{_ROW_LOOKUP[scope.kind]: scope.ids}).count()


class EarlierVersionsInline(admin.TabularInline):
    """A row's earlier versions, oldest first: what each update replaced (``timeline.revisions``)."""

    model = TimelineRowRevision
    fk_name = "row"
    verbose_name_plural = "earlier versions"
    fields = ["revision", "update_seq", "committed_at", "replaced_at", "item", "turn_id", "revert_token"]
    readonly_fields = fields
    ordering = ["revision"]
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(TimelineRow)
class TimelineRowAdmin(admin.ModelAdmin):
    list_display = ["agent_id", "seq", "item_type", "item_id", "committed_at", "revision_shown"]
    inlines = [EarlierVersionsInline]
    search_fields = ["=agent__agent_id", "=item_id"]
    fields = [
        "agent",
        "seq",
        "committed_at",
        "item_type",
        "item_id",
        "item",
        "turn_id",
        "provider_message_id",
        "provider_timeline_item_id",
        "revert_token",
        "extra",
        "revision_shown",
    ]
    readonly_fields = fields
    # Counting a long history twice per page buys nothing.
    show_full_result_count = False

    @admin.display(description="revision")
    def revision_shown(self, obj: TimelineRow) -> int:
        return obj.current_revision

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
