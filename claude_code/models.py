"""A Claude Code transcript (the SDK's session key) and the agent whose timeline holds it.

Each key (main transcript or subagent) is one ``ClaudeCodeSession`` row pointing at its own
agent; a subagent's agent has the session's agent as ``parent``. The entries are that agent's
timeline rows (``timeline.items.foreign_item("claude_code", entry, entry["type"])``). Deleting
the agent deletes the row (``ON DELETE CASCADE`` in the database), and deleting a session's
agent deletes its subagents' agents, so their rows too.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from claude_code.keys import MAX_KEY_LENGTH, MAX_NAMESPACE_LENGTH, NAMESPACE_CHARACTERS
from kernel.constraints import characters_check
from snapshots.models import AgentSnapshot


class ClaudeCodeSession(models.Model):
    namespace = models.CharField(max_length=MAX_NAMESPACE_LENGTH)
    project_key = models.CharField(max_length=MAX_KEY_LENGTH)
    session_id = models.CharField(max_length=MAX_KEY_LENGTH)
    #: "" for the main transcript, else e.g. ``subagents/agent-<id>``.
    subpath = models.CharField(max_length=MAX_KEY_LENGTH, blank=True, default="")
    agent = models.OneToOneField(AgentSnapshot, on_delete=models.CASCADE, related_name="claude_code_session")
    #: Storage time of the last append to this key, in Unix epoch milliseconds (the SDK's
    #: ``list_sessions`` mtime). NULL while nothing was appended to this key itself: a session
    #: created only as the parent of a subagent appended first, which ``load`` and
    #: ``list_sessions`` do not show.
    mtime_ms = models.BigIntegerField(null=True, blank=True)
    #: The summary sidecar's ``data``, as the SDK's ``fold_session_summary`` made it: stored
    #: verbatim, never interpreted. NULL until the first write. Main transcripts only.
    summary = models.JSONField(null=True, blank=True)
    #: Compare-and-swap counter of ``summary``: 0 before the first write, +1 per write.
    summary_version = models.PositiveIntegerField(default=0)
    #: When ``summary`` was last written, on the clock of ``mtime_ms`` and never below it.
    summary_mtime_ms = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The unique key's index also serves listing a project's sessions and a session's subkeys.
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "project_key", "session_id", "subpath"], name="claude_code_session_key_unique"
            ),
            characters_check(
                "namespace",
                NAMESPACE_CHARACTERS,
                min_length=1,
                max_length=MAX_NAMESPACE_LENGTH,
                name="claude_code_session_namespace_chars",
            ),
            models.CheckConstraint(
                condition=Q(subpath="") | (Q(summary__isnull=True) & Q(summary_version=0)),
                name="claude_code_session_summary_main_only",
            ),
        ]

    def __str__(self) -> str:
        tail = f" {self.subpath}" if self.subpath else ""
        return f"{self.project_key} {self.session_id}{tail}"


class ClaudeCodeImportRun(models.Model):
    """One committed run of ``manage.py import_claude_code`` (``claude_code.home_import``)."""

    source_path = models.CharField(max_length=4096)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    #: {"transcripts": n, "sessions_created": n, "sessions_topped_up": n, ...}
    counts = models.JSONField(default=dict)
    #: The run's warnings and every side file it did not read, with why.
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at"]
        verbose_name = "Claude Code import"

    def __str__(self) -> str:
        return f"import of {self.source_path} at {self.started_at:%Y-%m-%d %H:%M:%S}"
