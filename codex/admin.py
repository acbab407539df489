"""Codex import runs in the admin: written by the import command, read here."""

from __future__ import annotations

from django.contrib import admin

from codex.models import CodexImportRun


@admin.register(CodexImportRun)
class CodexImportRunAdmin(admin.ModelAdmin):
    list_display = ["source_path", "started_at", "finished_at", "summary", "warning_count"]
    fields = ["source_path", "started_at", "finished_at", "counts", "warnings", "unread"]
    readonly_fields = fields
    search_fields = ["source_path"]
    date_hierarchy = "started_at"

    @admin.display(description="counts")
    def summary(self, obj):
        counts = obj.counts if isinstance(obj.counts, dict) else {}
        return (
            "; ".join(
                f"{name}: " + ", ".join(f"{k} {v}" for k, v in numbers.items())
                for name, numbers in counts.items()
                if isinstance(numbers, dict)
            )
            or "-"
        )

    @admin.display(description="warnings")
    def warning_count(self, obj):
        return len(obj.warnings) if isinstance(obj.warnings, list) else 0

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
