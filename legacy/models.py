"""The log of legacy imports."""

from __future__ import annotations

from django.db import models


class ImportRun(models.Model):
    """One committed run of ``manage.py import_legacy_json``."""

    source_path = models.CharField(max_length=4096)
    backup_path = models.CharField(max_length=4096, blank=True, default="")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    # {"projects": {"created": n, "updated": n, "unchanged": n, "skipped": n}, ...}
    counts = models.JSONField(default=dict)
    skipped = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        # The table keeps the name it had when imports lived in the chartr app.
        db_table = "chartr_importrun"
        ordering = ["-started_at"]
        verbose_name = "legacy import"

    def __str__(self) -> str:
        return f"import of {self.source_path} at {self.started_at:%Y-%m-%d %H:%M:%S}"
