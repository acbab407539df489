"""Legacy import runs in the admin: written by the import command, read here."""

from __future__ import annotations

from django.contrib import admin

from legacy.models import ImportRun


@admin.register(ImportRun)
class ImportRunAdmin(admin.ModelAdmin):
    """The record of each legacy import: written by the import command, read here."""

    list_display = ["source_path", "started_at", "finished_at", "summary", "warning_count"]
    fields = ["source_path", "backup_path", "started_at", "finished_at", "counts", "skipped", "warnings"]
    readonly_fields = fields
    search_fields = ["source_path"]
    date_hierarchy = "started_at"

    @admin.display(description="counts")
    def summary(self, obj):
        counts = obj.counts if isinstance(obj.counts, dict) else {}
        parts = []
        for name, numbers in counts.items():
            if isinstance(numbers, dict):
                parts.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in numbers.items()))
            else:
                parts.append(f"{name}: {numbers}")
        return "; ".join(parts) or "-"

    @admin.display(description="warnings")
    def warning_count(self, obj):
        return len(obj.warnings) if isinstance(obj.warnings, list) else 0

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
