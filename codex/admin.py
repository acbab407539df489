"""Codex import runs in the admin: written by the import command, read here."""

from __future__ import annotations

from django.contrib import admin

from codex.models import CodexImportRun
from kernel.admin import CommandRunAdmin


@admin.register(CodexImportRun)
class CodexImportRunAdmin(CommandRunAdmin):
    fields = ["source_path", "started_at", "finished_at", "counts", "warnings", "unread"]
