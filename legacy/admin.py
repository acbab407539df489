"""Legacy import runs in the admin: written by the import command, read here."""

from __future__ import annotations

from django.contrib import admin

from kernel.admin import CommandRunAdmin
from legacy.models import ImportRun


@admin.register(ImportRun)
class ImportRunAdmin(CommandRunAdmin):
    """The record of each legacy import: written by the import command, read here."""

    fields = ["source_path", "backup_path", "started_at", "finished_at", "counts", "skipped", "warnings"]
