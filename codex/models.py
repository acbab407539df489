"""What chartr remembers of each Codex thread it took in, and of each import run."""

from __future__ import annotations

from django.db import models

from snapshots.models import AgentSnapshot


class CodexThread(models.Model):
    """One Codex thread, taken in as the agent of the same id, and how far its rollout files were read.

    The thread's lines are the lines of its segments in order (the sealed ones a newer Codex rotated
    away, oldest first, then the live file); its timeline holds them as rows ``first_seq`` ..
    ``first_seq + lines - 1``. ``digest`` (SHA-256 of those lines' records as canonical JSON, keys sorted)
    tells a later run whether the files still begin with what was taken in, and ``files`` how the
    lines split into files, ``[{"path": <relative to the Codex home>, "lines": n}, ...]``, so an
    export writes each back where it was.
    """

    agent = models.OneToOneField(AgentSnapshot, primary_key=True, on_delete=models.CASCADE, related_name="codex_thread")
    first_seq = models.PositiveBigIntegerField(default=1)
    lines = models.PositiveBigIntegerField(default=0)
    digest = models.CharField(max_length=64)
    files = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "codex_thread"
        verbose_name = "Codex thread"
        constraints = [
            models.CheckConstraint(condition=models.Q(first_seq__gte=1), name="codex_thread_first_seq_positive"),
        ]

    def __str__(self) -> str:
        return f"Codex thread {self.agent_id} ({self.lines} lines)"


class CodexImportRun(models.Model):
    """One committed run of ``manage.py import_codex``."""

    source_path = models.CharField(max_length=4096)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    #: {"threads": {"created": n, "updated": n, "unchanged": n}, "rows": {"created": n, "unchanged": n}, ...}
    counts = models.JSONField(default=dict)
    warnings = models.JSONField(default=list, blank=True)
    #: "entry: why" for every part of the home the run did not read
    unread = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "codex_import_run"
        ordering = ["-started_at"]
        verbose_name = "Codex import"

    def __str__(self) -> str:
        return f"Codex import of {self.source_path} at {self.started_at:%Y-%m-%d %H:%M:%S}"
