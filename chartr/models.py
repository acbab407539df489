"""Cross-app records: API tokens and the log of legacy imports."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A bearer token for /api/. Only its SHA-256 is stored, so it can never be read back."""

    name = models.CharField(max_length=128)
    # The first characters of the token, kept so operators can tell tokens apart.
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    read_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(token_hash__regex=r"^[0-9a-f]{64}$"), name="api_token_hash_is_sha256"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


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
        ordering = ["-started_at"]
        verbose_name = "legacy import"

    def __str__(self) -> str:
        return f"import of {self.source_path} at {self.started_at:%Y-%m-%d %H:%M:%S}"
