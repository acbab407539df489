"""Agent snapshots in the admin: every write goes through snapshots.services.

Apps above snapshots add read-only sections to the agent's change page with
``register_agent_page_section``, and pages of their own for one agent, linked
at the top of its change page, with ``register_agent_page`` (the timeline does
both), so snapshots imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import F
from django.http import QueryDict
from django.urls import URLPattern
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince
from django.utils.timezone import localtime

from kernel.admin import ArchivableAdmin, ArchivedListFilter, ServiceForm
from registry.cascade import ARCHIVE_TAKES_ALONG
from registry.models import Workspace
from registry.selectors import deletion_cascade
from snapshots import selectors, services
from snapshots.admin_attention import ClearAttentionMixin
from snapshots.models import AgentSnapshot
from snapshots.selectors import (
    LONGEST_WAITING_FIRST,
    NO_REASON,
    TIMELINE_HEAD,
    attention_condition,
    stale_condition,
    with_staleness,
)


@dataclass(frozen=True)
class AgentPageSection:
    """A read-only section below the agent's change form (``top``: above it).

    ``context(agent, query_params)`` returns the variables ``template`` is
    rendered with; it runs only for operators who may view the agent.
    """

    template: str
    context: Callable[[AgentSnapshot, QueryDict], dict[str, Any]]
    top: bool = False


_agent_page_sections: dict[str, AgentPageSection] = {}


def register_agent_page_section(
    *, template: str, context: Callable[[AgentSnapshot, QueryDict], dict[str, Any]], top: bool = False
) -> None:
    """Add a section to every agent's change page (``top``: above the form, else below it);
    called from the owning app's ``AppConfig.ready()``."""
    _agent_page_sections[template] = AgentPageSection(template=template, context=context, top=top)


@dataclass(frozen=True)
class AgentPage:
    """A page of one agent's own, linked at the top of its change page.

    ``urls(model_admin)`` returns the page's URL patterns (and any it needs,
    such as a stream), added to the agent admin's; the link goes to the one
    named ``snapshots_agentsnapshot_<name>``, which takes the agent's id.
    """

    name: str
    label: str
    urls: Callable[[admin.ModelAdmin], list[URLPattern]]


_agent_pages: dict[str, AgentPage] = {}


def register_agent_page(*, name: str, label: str, urls: Callable[[admin.ModelAdmin], list[URLPattern]]) -> None:
    """Add a page to every agent; called from the owning app's ``AppConfig.ready()``."""
    _agent_pages[name] = AgentPage(name=name, label=label, urls=urls)


AGENT_ADD_FIELDS = [
    "workspace",
    "agent_id",
    "provider",
    "title",
    "lifecycle",
    "last_mode_id",
    "internal",
    "labels",
    "config",
    "requires_attention",
    "attention_reason",
]


class AgentAddForm(ServiceForm):
    workspace = forms.ModelChoiceField(
        queryset=Workspace.objects.live().order_by("display_name", "id"),
        help_text="Only live workspaces take new agents.",
    )
    agent_id = forms.CharField(max_length=128, required=False, help_text="Leave blank to generate one.")

    error_fields = {"archived": "workspace", "not_found": "workspace", "conflict": "agent_id"}

    class Meta:
        model = AgentSnapshot
        fields = AGENT_ADD_FIELDS

    def call_service(self):
        # A blank id and reason are "none" to the service: it generates the id and drops the reason.
        return services.create_agent(**self.cleaned_data)


#: What the agent's daemon reports and owns: shown read-only on the change page, where an
#: operator's edit would be overwritten by the daemon's next snapshot (the API still takes them).
DAEMON_OWNED_FIELDS = ("provider", "title", "lifecycle", "last_mode_id", "config", "runtime_info", "persistence")
#: What an operator edits on the change page: the rest of what ``update_agent`` accepts.
OPERATOR_FIELDS = tuple(name for name in services.UPDATABLE_AGENT_FIELDS if name not in DAEMON_OWNED_FIELDS)


class AgentChangeForm(ServiceForm):
    """Edits the fields an operator owns (``OPERATOR_FIELDS``), guarded by the version the operator saw."""

    class Meta:
        model = AgentSnapshot
        fields = [*OPERATOR_FIELDS, "version"]
        widgets = {"version": forms.HiddenInput}

    def call_service(self):
        changes = self.changed_values(OPERATOR_FIELDS)
        if not changes:
            return None
        return services.update_agent(agent=self.instance, expected_version=self.cleaned_data["version"], **changes)


class StaleListFilter(admin.SimpleListFilter):
    title = "stale"
    parameter_name = "stale"

    def lookups(self, request, model_admin):
        return [("yes", "Stale"), ("no", "Not stale")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(stale_condition())
        if self.value() == "no":
            return queryset.exclude(stale_condition())
        return queryset


class AttentionListFilter(admin.SimpleListFilter):
    """Live agents needing attention, for any reason or one; listed the longest waiting first
    (``AgentSnapshotAdmin.get_ordering``). The dashboard's "see all" links land here."""

    title = "needs attention"
    parameter_name = "attention"
    ANY = "any"

    def lookups(self, request, model_admin):
        return [(self.ANY, "For any reason"), *AgentSnapshot.AttentionReason.choices, (NO_REASON, "Without a reason")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.ANY:
            return queryset.filter(attention_condition())
        if value in {reason for reason, _ in self.lookup_choices}:
            return queryset.filter(attention_condition(value))
        return queryset


#: The timeline head's values the agent's pages show (``_head_field``), by the admin's names.
HEAD_FIELDS = (
    "last_activity_at",
    "last_user_message_at",
    "min_seq",
    "head_seq",
    "timeline_epoch",
    "committed_rows",
    "committed_bytes",
)


def _head_field(name: str, description: str):
    """A read-only admin column showing the agent's timeline head's ``name``, sortable by it."""

    @admin.display(description=description, ordering=f"{TIMELINE_HEAD}__{name}")
    def show(self, obj):
        return getattr(obj.timeline_head, name)

    return show


@admin.register(AgentSnapshot)
class AgentSnapshotAdmin(ClearAttentionMixin, ArchivableAdmin):
    form = AgentChangeForm
    add_form = AgentAddForm
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "agent_id",
                    "workspace",
                    "cwd",
                    "provider",
                    "title",
                    "lifecycle",
                    "lifecycle_before_archive",
                    "last_mode_id",
                    "internal",
                    "version",
                ]
            },
        ),
        ("Agents around it", {"fields": ["parent_link", "children_list"]}),
        ("Attention", {"fields": ["requires_attention", "attention_reason", "attention_at"]}),
        (
            "Activity",
            {
                "fields": [
                    *HEAD_FIELDS[:2],
                    "last_seen_at",
                    "created_at",
                    "updated_at",
                    "archived_at",
                    *HEAD_FIELDS[2:],
                ]
            },
        ),
        ("Data", {"fields": ["labels", "config", "runtime_info", "persistence"], "classes": ["collapse"]}),
        ("Imported keys", {"fields": ["extra"], "classes": ["collapse"]}),
    ]
    readonly_fields = [
        "extra",
        "agent_id",
        "workspace",
        "cwd",
        "created_at",
        "updated_at",
        "last_seen_at",
        "archived_at",
        "lifecycle_before_archive",
        "parent_link",
        "children_list",
        *DAEMON_OWNED_FIELDS,
        # The timeline's head: set by its services, never edited here.
        *HEAD_FIELDS,
    ]
    list_display = [
        "agent",
        "workspace_name",
        "lifecycle",
        "stale",
        "attention",
        "waiting_since",
        "last_activity_at",
        "committed_rows",
        "archived_state",
    ]
    # The agent column links to the change page itself, its copy button outside the link.
    list_display_links = None
    list_select_related = ["workspace__project", TIMELINE_HEAD]
    list_filter = [
        ArchivedListFilter,
        StaleListFilter,
        AttentionListFilter,
        "lifecycle",
        "provider",
        ("workspace__project", admin.RelatedFieldListFilter),
    ]
    search_fields = ["agent_id", "title", "workspace__directory", "workspace__display_name"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "agent_id"]
    change_form_template = "admin/snapshots/agentsnapshot/change_form.html"
    actions = [*ArchivableAdmin.actions, "clear_attention_selected"]

    service_arg = "agent"
    cascade_key = "agents"
    archive_takes_along = ARCHIVE_TAKES_ALONG["agents"]
    state_kind = "agents"
    archive_service = staticmethod(services.archive_agent)
    unarchive_service = staticmethod(services.unarchive_agent)
    archive_preview = staticmethod(selectors.agent_archive_preview)
    unarchive_preview = staticmethod(selectors.agent_unarchive_preview)
    delete_service = staticmethod(services.delete_agent)

    @admin.display(description="agent", ordering="title")
    def agent(self, obj):
        """The title (cut short, whole on hover) and the short id, which a button copies whole
        (``chartr/static/chartr/copy.js``)."""
        return format_html(
            '<a href="{}" class="agent-link"><span class="agent-title" title="{}">{}</span> '
            '<code class="agent-short-id" title="{}">{}</code></a> '
            '<button type="button" class="copy-button" data-copy="{}" title="Copy {}">copy</button>',
            self.change_url(obj),
            obj.title,
            obj.title or "(untitled)",
            obj.agent_id,
            obj.short_id,
            obj.agent_id,
            obj.agent_id,
        )

    @admin.display(description="works under")
    def parent_link(self, obj):
        """The agent this one works under (a Claude Code subagent's session), linked."""
        if obj.parent_id is None:
            return "-"
        return format_html('<a href="{}"><code>{}</code></a>', self.change_url(obj.parent), obj.parent_id)

    @admin.display(description="agents under it")
    def children_list(self, obj):
        """Its children, linked (deleting this agent deletes them)."""
        children, total = selectors.agent_children(agent=obj)
        if not total:
            return "-"
        items = format_html_join(
            "",
            '<li><a href="{}"><code>{}</code></a> {} ({})</li>',
            ((self.change_url(c), c.agent_id, c.title, c.lifecycle) for c in children),
        )
        more = f" and {total - len(children)} more" if total > len(children) else ""
        return format_html("<ul>{}</ul>{}", items, more)

    @admin.display(description="workspace", ordering="workspace__display_name")
    def workspace_name(self, obj):
        return f"{obj.workspace.display_name} ({obj.workspace.project.display_name})"

    @admin.display(description="needs attention", ordering="requires_attention")
    def attention(self, obj):
        if not obj.requires_attention:
            return None
        return format_html('<span class="attention-label">{}</span>', obj.attention_reason or "yes (no reason)")

    @admin.display(description="waiting since", ordering=F("attention_at").asc(nulls_last=True))
    def waiting_since(self, obj):
        """How long an agent needing attention has waited ("2 hours, 5 minutes"), the time itself on hover."""
        if not obj.requires_attention or obj.attention_at is None:
            return None
        return format_html(
            '<time class="waiting-since" datetime="{}" title="{}">{}</time>',
            obj.attention_at.isoformat(),
            date_format(localtime(obj.attention_at), "DATETIME_FORMAT"),
            timesince(obj.attention_at),
        )

    def get_queryset(self, request):
        return with_staleness(super().get_queryset(request))

    def get_ordering(self, request):
        """Agents filtered by attention come the longest waiting first (a column's sort still wins)."""
        if request.GET.get(AttentionListFilter.parameter_name):
            return list(LONGEST_WAITING_FIRST)
        return super().get_ordering(request)

    @admin.display(description="stale", ordering="is_stale")
    def stale(self, obj):
        return mark_safe('<span class="stale-label">stale</span>') if obj.is_stale else None  # noqa: S308 - a constant

    last_activity_at = _head_field("last_activity_at", "last activity")
    last_user_message_at = _head_field("last_user_message_at", "last user message")
    min_seq = _head_field("min_seq", "min seq")
    head_seq = _head_field("head_seq", "head seq")
    timeline_epoch = _head_field("epoch", "timeline epoch")
    committed_rows = _head_field("committed_rows", "timeline rows")
    committed_bytes = _head_field("committed_bytes", "timeline bytes")

    def deletion_counts(self, objs):
        # The agents under them go too (the parent's foreign key cascades in the database).
        under = selectors.agent_descendants([obj.pk for obj in objs])
        return deletion_cascade(agents=[*objs, *AgentSnapshot.objects.filter(pk__in=under).only("pk")]).by_label()

    def get_urls(self):
        pages = (pattern for page in _agent_pages.values() for pattern in page.urls(self))
        return [*pages, self.clear_attention_url(), *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "agent_pages": list(_agent_pages.values()),
            "can_clear_attention": self.can_clear_attention(request),
        }
        agent = self.get_object(request, unquote(object_id))
        if agent is not None and self.has_view_or_change_permission(request, agent):
            # The registered sections' templates, above and below the form, and their variables.
            sections = list(_agent_page_sections.values())
            extra_context["agent_page_top_sections"] = [section.template for section in sections if section.top]
            extra_context["agent_page_sections"] = [section.template for section in sections if not section.top]
            for section in sections:
                extra_context.update(section.context(agent, request.GET))
        return super().change_view(request, object_id, form_url, extra_context)
