"""The Claude Code sessions in the admin: read-only, each linked to its agent (where its history is).

Deleting a session is deleting its agent (the agent's page; its subagents go with it), so this
list neither adds, changes nor deletes.
"""

from __future__ import annotations

import datetime as dt

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from claude_code.models import ClaudeCodeImportRun, ClaudeCodeSession
from kernel.admin import CommandRunAdmin, ReadOnlyMixin


@admin.register(ClaudeCodeSession)
class ClaudeCodeSessionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["session_id", "transcript", "project_key", "namespace", "agent_link", "mtime"]
    list_filter = ["namespace"]
    search_fields = ["session_id", "project_key", "agent__agent_id", "agent__title"]
    list_select_related = ["agent"]
    ordering = ["-mtime_ms", "session_id", "subpath"]
    fields = ["namespace", "project_key", "session_id", "subpath", "agent_link", "mtime", "summary", "summary_version"]

    @admin.display(description="transcript", ordering="subpath")
    def transcript(self, obj):
        return obj.subpath or "main"

    @admin.display(description="agent", ordering="agent__agent_id")
    def agent_link(self, obj):
        url = reverse("admin:snapshots_agentsnapshot_change", args=[obj.agent_id])
        return format_html('<a href="{}"><code>{}</code></a> {}', url, obj.agent_id, obj.agent.title)

    @admin.display(description="last append", ordering="mtime_ms")
    def mtime(self, obj):
        if obj.mtime_ms is None:
            return "-"
        return dt.datetime.fromtimestamp(obj.mtime_ms / 1000, tz=dt.UTC)


@admin.register(ClaudeCodeImportRun)
class ClaudeCodeImportRunAdmin(CommandRunAdmin):
    """The record of each ``import_claude_code`` run: written by the command, read here."""

    fields = ["source_path", "started_at", "finished_at", "counts", "warnings"]
