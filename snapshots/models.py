from __future__ import annotations

import re
import secrets

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from kernel.constraints import archived_has_operation_check, characters_check, choices_check
from registry.directories import MAX_DIRECTORY_LENGTH
from registry.models import EXTRA_HELP, ArchivableQuerySet, Workspace

# The characters of an agent id, as a bracket expression (the database's check, kernel/constraints.py).
AGENT_ID_CHARACTERS = "A-Za-z0-9._:-"
AGENT_ID_MAX_LENGTH = 128
# \A and \Z, not ^ and $: "$" would also accept a trailing newline.
AGENT_ID_PATTERN = rf"\A[{AGENT_ID_CHARACTERS}]{{1,{AGENT_ID_MAX_LENGTH}}}\Z"
AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)
agent_id_validator = RegexValidator(
    AGENT_ID_RE,
    "An agent id is 1 to 128 characters of letters, digits, '.', '_', ':' and '-'.",
    code="invalid",
)


#: How much of a long agent id the admin shows beside its title (the full id on hover and copy).
SHORT_ID_LENGTH = 8

#: Path segments a URL resolves away: no client could address /agents/.. at all.
DOT_SEGMENT_IDS = (".", "..")
DOT_SEGMENT_MESSAGE = "An agent id cannot be '.' or '..': no URL can reach such an agent."


def validate_not_dot_segment(value: str) -> None:
    if value in DOT_SEGMENT_IDS:
        raise ValidationError(DOT_SEGMENT_MESSAGE, code="invalid")


def new_timeline_epoch() -> str:
    """A fresh timeline epoch (the default of ``timeline.models.TimelineHead.epoch``).

    Defined here because migrations name it here (``0001_initial`` gave the agent
    table its epoch column before the timeline had a table of its own)."""
    return secrets.token_hex(8)


class Lifecycle(models.TextChoices):
    INITIALIZING = "initializing", "initializing"
    IDLE = "idle", "idle"
    RUNNING = "running", "running"
    ERROR = "error", "error"
    CLOSED = "closed", "closed"


#: Lifecycles in which an agent claims a daemon is driving it, so silence means trouble.
ACTIVE_LIFECYCLES = (Lifecycle.RUNNING, Lifecycle.INITIALIZING)


class AttentionReason(models.TextChoices):
    FINISHED = "finished", "finished"
    ERROR = "error", "error"
    PERMISSION = "permission", "permission"


class AgentSnapshot(models.Model):
    Lifecycle = Lifecycle
    AttentionReason = AttentionReason

    agent_id = models.CharField(
        primary_key=True, max_length=128, validators=[agent_id_validator, validate_not_dot_segment]
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agents")
    # The agent this one works under (a Claude Code subagent under its session, a forked Codex
    # thread under the thread it came from): deleting the parent deletes its children.
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children", editable=False
    )
    # The agent's own working directory: its workspace's directory or a
    # folder below it (empty when unknown).
    cwd = models.CharField(max_length=MAX_DIRECTORY_LENGTH, blank=True, default="")
    provider = models.CharField(max_length=64)
    title = models.CharField(max_length=512, blank=True, default="")
    labels = models.JSONField(default=dict, blank=True)
    lifecycle = models.CharField(max_length=16, choices=Lifecycle.choices, default=Lifecycle.INITIALIZING)
    last_mode_id = models.CharField(max_length=128, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    runtime_info = models.JSONField(default=dict, blank=True)
    persistence = models.JSONField(default=dict, blank=True)
    requires_attention = models.BooleanField(default=False)
    attention_reason = models.CharField(max_length=16, choices=AttentionReason.choices, null=True, blank=True)
    attention_at = models.DateTimeField(null=True, blank=True)
    internal = models.BooleanField(default=False)
    extra = models.JSONField(default=dict, blank=True, editable=False, help_text=EXTRA_HELP)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The agent's last sign of life here: its creation, an update or a heartbeat
    # (its own appends are the timeline's: ``snapshots.selectors.last_sign_of_life``).
    # NULL for agents chartr has never heard from (the legacy import): a running
    # one of those is stale at once, its old daemon being gone.
    last_seen_at = models.DateTimeField(null=True, blank=True, editable=False)
    archived_at = models.DateTimeField(null=True, blank=True)
    archive_operation = models.UUIDField(null=True, blank=True, editable=False)
    # What the archive that closed the agent found, so its unarchive puts it back
    # (NULL for a live agent, and for one archived elsewhere, such as an imported one).
    lifecycle_before_archive = models.CharField(
        max_length=16, choices=Lifecycle.choices, null=True, blank=True, editable=False
    )
    version = models.PositiveIntegerField(default=1)

    objects = ArchivableQuerySet.as_manager()

    class Meta:
        # The admin says "agents": "agent snapshots" read like a kind of the separate data snapshots.
        verbose_name = "agent"
        verbose_name_plural = "agents"
        ordering = ["created_at", "agent_id"]
        constraints = [
            characters_check(
                "agent_id", AGENT_ID_CHARACTERS, min_length=1, max_length=AGENT_ID_MAX_LENGTH, name="agent_id_valid"
            ),
            models.CheckConstraint(condition=~models.Q(agent_id__in=DOT_SEGMENT_IDS), name="agent_id_not_dot_segment"),
            choices_check("lifecycle", Lifecycle.choices, "agent_lifecycle_valid"),
            choices_check("attention_reason", AttentionReason.choices, "agent_attention_reason_valid", nullable=True),
            # Attention may come without a reason (Paseo's own schema allows
            # it), but a reason never comes without attention.
            models.CheckConstraint(
                condition=models.Q(requires_attention=True) | models.Q(attention_reason__isnull=True),
                name="agent_attention_reason_needs_attention",
            ),
            archived_has_operation_check("agent"),
            models.CheckConstraint(condition=~models.Q(parent=models.F("agent_id")), name="agent_not_own_parent"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="agent_version_positive"),
            choices_check(
                "lifecycle_before_archive", Lifecycle.choices, "agent_lifecycle_before_archive_valid", nullable=True
            ),
            models.CheckConstraint(
                condition=models.Q(lifecycle_before_archive__isnull=True) | models.Q(archived_at__isnull=False),
                name="agent_lifecycle_before_archive_only_archived",
            ),
        ]
        indexes = [
            models.Index(fields=["workspace", "archived_at"], name="agent_workspace_archived_idx"),
            models.Index(fields=["archived_at", "created_at"], name="agent_archived_created_idx"),
            models.Index(fields=["archive_operation"], name="agent_archive_op_idx"),
            models.Index(
                fields=["-attention_at"],
                condition=models.Q(requires_attention=True),
                name="agent_needs_attention_idx",
            ),
            # The stale reads (the dashboard, the admin's filter, mark_stale_agents) look only at
            # live agents claiming to run, a set as small as the running fleet. Keyed by lifecycle,
            # not by last_seen_at: every append and heartbeat moves last_seen_at, and an index on
            # it cost each append a page of its own (docs/benchmarks.md).
            models.Index(
                fields=["lifecycle"],
                condition=models.Q(lifecycle__in=ACTIVE_LIFECYCLES, archived_at__isnull=True),
                name="agent_active_idx",
            ),
        ]

    def __str__(self) -> str:
        """The title and the short id ("Fix the build · 3f2a9c1d"), so two agents of one title
        tell apart; the whole id when there is no title."""
        return f"{self.title} · {self.short_id}" if self.title else self.agent_id

    @property
    def short_id(self) -> str:
        """The id's first ``SHORT_ID_LENGTH`` characters (a UUID's first group), or all of a short one."""
        if len(self.agent_id) <= SHORT_ID_LENGTH + 4:
            return self.agent_id
        return self.agent_id[:SHORT_ID_LENGTH]

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None
