"""Read-only admins: ``ReadOnlyMixin``, and the record of a command's runs (an importer's ``ImportRun``)."""

from __future__ import annotations

from django.contrib import admin


class ReadOnlyMixin:
    """For a ``ModelAdmin`` or an inline whose records are written elsewhere: none is added, changed or deleted here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class CommandRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Written by the command, read here: nothing is added, changed or deleted in the admin.

    The model has ``source_path``, ``started_at``, ``finished_at``, ``counts`` (a JSON object: a
    number, or an object of numbers, per kind) and ``warnings`` (a list); ``fields`` lists what the
    record's page shows."""

    list_display = ["source_path", "started_at", "finished_at", "summary", "warning_count"]
    search_fields = ["source_path"]
    date_hierarchy = "started_at"

    @admin.display(description="counts")
    def summary(self, obj):
        counts = obj.counts if isinstance(obj.counts, dict) else {}
        parts = []
        for name, numbers in counts.items():
            label = name.replace("_", " ")
            if isinstance(numbers, dict):
                parts.append(f"{label}: " + ", ".join(f"{k} {v}" for k, v in numbers.items()))
            else:
                parts.append(f"{label} {numbers}")
        return "; ".join(parts) or "-"

    @admin.display(description="warnings")
    def warning_count(self, obj):
        return len(obj.warnings) if isinstance(obj.warnings, list) else 0
