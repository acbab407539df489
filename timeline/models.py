from __future__ import annotations

from django.db import models
from django.db.models import BooleanField, ExpressionWrapper, Q

from registry.models import EXTRA_HELP
from snapshots.models import AgentSnapshot, new_timeline_epoch

#: The longest epoch a timeline keeps: chartr makes 16 hex digits (``new_timeline_epoch``),
#: a history carried over keeps its own (Paseo's are 36-character UUIDs).
EPOCH_MAX_LENGTH = 128
#: The longest of Paseo's string row keys (``turn_id``, ``provider_message_id``, ``provider_timeline_item_id``).
MAX_ROW_KEY_LENGTH = 256
#: What a row carries besides its agent, in the order pages render it and appends insert it.
ROW_FIELDS = (
    "seq",
    "committed_at",
    "item_type",
    "item",
    "item_id",
    "turn_id",
    "provider_message_id",
    "provider_timeline_item_id",
    "revert_token",
    "extra",
)


class TimelineHead(models.Model):
    """An agent's timeline bookkeeping, one row per agent, written only by the timeline's services.

    Its own table, not columns of the agent snapshot: an append locks and writes
    this row, never the record that every snapshot update and heartbeat writes too.
    Made with the agent (``snapshots.signals.agents_created``) and deleted with it
    (the foreign key cascades in the database).
    """

    agent = models.OneToOneField(
        AgentSnapshot, primary_key=True, on_delete=models.CASCADE, related_name="timeline_head"
    )
    # The last committed seq (0 = empty).
    head_seq = models.PositiveBigIntegerField(default=0)
    # The first retained seq: rows min_seq..head_seq exist, contiguous
    # (min_seq = head_seq + 1 when none are retained). Above 1 when older rows
    # were pruned (a Paseo history imported as it was, or a trim).
    min_seq = models.PositiveBigIntegerField(default=1)
    # Changes only when the history is replaced (a data-snapshot restore, a carried-over history).
    epoch = models.CharField(max_length=EPOCH_MAX_LENGTH, default=new_timeline_epoch)
    # Growth counters, moved in the same transaction as the rows (append, import,
    # trim); `manage.py check_counters` verifies them. Bytes are the items'
    # compact UTF-8 JSON (timeline.items.item_bytes).
    committed_rows = models.PositiveBigIntegerField(default=0)
    committed_bytes = models.PositiveBigIntegerField(default=0)
    # The newest row's commit time, and the newest user message's (never moved back:
    # an imported history may be older than what the agent already did).
    last_activity_at = models.DateTimeField(null=True, blank=True)
    last_user_message_at = models.DateTimeField(null=True, blank=True)
    # When the agent's own daemon last appended: a sign of life, as a heartbeat is
    # (``snapshots.selectors.last_sign_of_life``). NULL for histories the importer carried.
    last_appended_at = models.DateTimeField(null=True, blank=True)
    # Updates of committed rows so far (``timeline.writes.revisions.update_row``): each takes the
    # next number, which its ``updated`` event carries (``seq:update_seq`` ids on the stream).
    update_seq = models.PositiveBigIntegerField(default=0)
    # Paseo's backfill (``beginBackfill`` .. ``completeBackfill``, timeline.writes.history): while True the
    # rows are a provider's replay under way, not yet the whole conversation; pages say so.
    backfilling = models.BooleanField(default=False)

    class Meta:
        db_table = "timeline_head"
        verbose_name = "timeline head"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(min_seq__gte=1, min_seq__lte=models.F("head_seq") + 1),
                name="timeline_head_retained_range_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(committed_rows__gte=0, committed_bytes__gte=0),
                name="timeline_head_counters_not_negative",
            ),
        ]
        indexes = [models.Index(fields=["-last_activity_at"], name="timeline_head_activity_idx")]

    def __str__(self) -> str:
        return f"{self.agent_id} at {self.head_seq}"


class TimelineRow(models.Model):
    """One finalized item of an agent's committed history.

    Its seq never changes. Its content changes only through ``timeline.writes.revisions.update_row``
    (Paseo's ``updateCommittedRow``), which keeps the content it replaces as a
    ``TimelineRowRevision``.
    """

    # No index of its own: the (agent, seq) unique index serves every lookup by agent
    # (the cascade of an agent's delete included), and one index fewer is a page
    # fewer for every append to write.
    agent = models.ForeignKey(AgentSnapshot, on_delete=models.CASCADE, related_name="timeline_rows", db_index=False)
    seq = models.PositiveBigIntegerField()
    committed_at = models.DateTimeField()
    item_type = models.CharField(max_length=64)
    item = models.JSONField()
    item_id = models.CharField(max_length=256, null=True, blank=True)
    # The turn the row belongs to, as Paseo records it (``turnId``); null when unknown.
    turn_id = models.CharField(max_length=MAX_ROW_KEY_LENGTH, null=True, blank=True)
    # Paseo's row keys beside the item (``providerMessageId``, ``providerTimelineItemId``,
    # ``revertToken``), null when the row had none. ``revert_token`` is any JSON value:
    # SQL NULL when the row had no token, JSON ``null`` when it had a null one.
    provider_message_id = models.CharField(max_length=MAX_ROW_KEY_LENGTH, null=True, blank=True)
    provider_timeline_item_id = models.CharField(max_length=MAX_ROW_KEY_LENGTH, null=True, blank=True)
    revert_token = models.JSONField(null=True, blank=True)
    # NULL when the row has none (every row the API appends): adding the column then
    # rewrote no table, and the API renders it as {}.
    extra = models.JSONField(null=True, blank=True, help_text=EXTRA_HELP)
    # The row's version: NULL until its first update (revision 1, what every append writes,
    # so adding the columns rewrote no table), then 2, 3, ...
    revision = models.PositiveIntegerField(null=True, blank=True)
    # The agent's ``TimelineHead.update_seq`` of the update that wrote the current content; NULL when none did.
    update_seq = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["agent", "seq"]
        constraints = [
            # The backstop for seq assignment; the append service assigns
            # head+1.. under a lock on the agent row.
            models.UniqueConstraint(fields=["agent", "seq"], name="timeline_agent_seq_unique"),
            models.UniqueConstraint(
                fields=["agent", "item_id"],
                condition=models.Q(item_id__isnull=False),
                name="timeline_agent_item_id_unique",
            ),
            models.CheckConstraint(condition=models.Q(seq__gte=1), name="timeline_seq_positive"),
        ]
        indexes = [
            # The dashboard's rows-per-day chart reads the last 30 days by commit time.
            models.Index(fields=["committed_at"], name="timeline_committed_at_idx"),
            # The admin's timeline page: "the first row at or after a time" and
            # "the newest rows of these types" as index ranges bounded by their limit.
            # The text search index is engine-specific: timeline/search/.
            models.Index(fields=["agent", "committed_at", "seq"], name="timeline_agent_time_idx"),
            models.Index(fields=["agent", "item_type", "seq"], name="timeline_agent_type_idx"),
            # A reconnecting stream's "updates after u" (only updated rows are in it).
            models.Index(
                fields=["agent", "update_seq"],
                condition=models.Q(update_seq__isnull=False),
                name="timeline_agent_update_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}#{self.seq} {self.item_type}"

    @property
    def current_revision(self) -> int:
        return self.revision or 1


class TimelineRowRevision(models.Model):
    """An earlier version of a committed row: what an update (``timeline.writes.revisions.update_row``) replaced.

    Written only by that service, never changed, deleted with its row (the foreign key
    cascades in the database, as the row's own does with its agent).
    """

    row = models.ForeignKey(TimelineRow, on_delete=models.CASCADE, related_name="revisions", db_index=False)
    # The row's agent again, so a reconnecting stream reads an agent's updates by one index range.
    agent = models.ForeignKey(
        AgentSnapshot, on_delete=models.CASCADE, related_name="timeline_row_revisions", db_index=False
    )
    revision = models.PositiveIntegerField()
    # The agent's update number that wrote this version; NULL for the row as first committed.
    update_seq = models.PositiveBigIntegerField(null=True, blank=True)
    # When the next update replaced it.
    replaced_at = models.DateTimeField()
    committed_at = models.DateTimeField()
    item_type = models.CharField(max_length=64)
    item = models.JSONField()
    turn_id = models.CharField(max_length=256, null=True, blank=True)
    provider_message_id = models.CharField(max_length=256, null=True, blank=True)
    provider_timeline_item_id = models.CharField(max_length=256, null=True, blank=True)
    revert_token = models.JSONField(null=True, blank=True)
    extra = models.JSONField(null=True, blank=True, help_text=EXTRA_HELP)

    class Meta:
        db_table = "timeline_row_revision"
        verbose_name = "earlier version of a row"
        ordering = ["row", "revision"]
        constraints = [
            models.UniqueConstraint(fields=["row", "revision"], name="timeline_revision_unique"),
            models.CheckConstraint(condition=models.Q(revision__gte=1), name="timeline_revision_positive"),
        ]
        indexes = [
            models.Index(
                fields=["agent", "update_seq"],
                condition=models.Q(update_seq__isnull=False),
                name="timeline_revision_update_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"row {self.row_id} revision {self.revision}"


def has_revert_token() -> ExpressionWrapper:
    """A row's (or an earlier version's) ``has_revert_token`` annotation: its JSON field reads a null
    token (JSON null) and none (SQL NULL) alike, so a read that must tell them apart annotates this."""
    return ExpressionWrapper(Q(revert_token__isnull=False), output_field=BooleanField())
