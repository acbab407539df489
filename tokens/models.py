"""API tokens: bearer credentials for /api/, stored as hashes."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from kernel.constraints import characters_check


class ApiTokenQuerySet(models.QuerySet):
    def authenticating(self, now=None) -> ApiTokenQuerySet:
        """The tokens that authenticate at ``now``: not revoked, not expired."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


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
    # When it stops authenticating by itself (null: never); its open streams end then, as on a revoke.
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        # The table keeps the name it had when tokens lived in the chartr app.
        db_table = "chartr_apitoken"
        ordering = ["-created_at"]
        verbose_name = "API token"
        constraints = [
            characters_check("token_hash", "0-9a-f", min_length=64, max_length=64, name="api_token_hash_is_sha256"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class IdempotentCreate(models.Model):
    """The first answer to a create sent with an ``Idempotency-Key``, replayed to its retries.

    One row per (token, key): the unique constraint is what makes two racing
    retries create one thing (kernel/api/idempotency.py). A row older than
    ``kernel.api.idempotency.KEY_LIFETIME`` no longer replays: reusing its key
    replaces it.
    """

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # SHA-256 of the request (method, path, parsed body): a retry must send the same one.
    fingerprint = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    body = models.JSONField()
    headers = models.JSONField(default=dict)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "idempotent create"
        constraints = [
            models.UniqueConstraint(fields=["token", "key"], name="idempotent_create_one_per_token_and_key"),
            models.CheckConstraint(condition=~models.Q(key=""), name="idempotent_create_key_not_empty"),
            models.CheckConstraint(
                condition=models.Q(status__gte=200, status__lte=299), name="idempotent_create_status_is_success"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.status})"


class StreamTicket(models.Model):
    """A short-lived, single-use credential for one agent's live stream, for clients that cannot
    send a header (a browser's ``EventSource``): ``?ticket=`` in the stream's URL.

    Minted by a token (``tokens.services.mint_stream_ticket``), read-only whatever the token,
    stored as its SHA-256 like the token itself. The first stream it opens spends it
    (``used_at``); after ``expires_at`` it opens nothing. Revoking the token voids its tickets.
    """

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="+")
    ticket_hash = models.CharField(max_length=64, unique=True, editable=False)
    # The one agent whose stream it opens (an id, not a key: tokens know nothing of agents).
    agent_id = models.CharField(max_length=128)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "stream ticket"
        # Minting deletes the expired ones (tokens.services.mint_stream_ticket).
        indexes = [models.Index(fields=["expires_at"], name="stream_ticket_expires_at")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(expires_at__gt=models.F("created_at")), name="stream_ticket_expires_after_creation"
            ),
            models.CheckConstraint(
                condition=models.Q(used_at__isnull=True) | models.Q(used_at__gte=models.F("created_at")),
                name="stream_ticket_used_after_creation",
            ),
            models.CheckConstraint(condition=~models.Q(agent_id=""), name="stream_ticket_agent_not_empty"),
        ]

    def __str__(self) -> str:
        return f"stream ticket for {self.agent_id}"


class ThrottleWindow(models.Model):
    """How many requests one token made in one fixed window of ``CHARTR_API_THROTTLE_RATE``'s period.

    One row per (token, period, window), counted by every worker and instance on
    one database, so the rate holds across all of them (tokens/throttling.py).
    Rows of past windows are deleted as a token opens a new one.
    """

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="+")
    period_seconds = models.PositiveIntegerField()
    #: ``floor(unix time / period_seconds)``.
    window_index = models.BigIntegerField()
    hits = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "throttle window"
        constraints = [
            models.UniqueConstraint(
                fields=["token", "period_seconds", "window_index"], name="throttle_window_one_per_token_and_window"
            ),
            models.CheckConstraint(condition=models.Q(period_seconds__gte=1), name="throttle_window_period_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.token_id}: {self.hits} in window {self.window_index} of {self.period_seconds}s"
