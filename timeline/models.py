from __future__ import annotations

from django.db import models

from registry.models import EXTRA_HELP
from snapshots.models import AgentSnapshot


class TimelineRow(models.Model):
    """One finalized item of an agent's committed history. Never updated."""

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
    turn_id = models.CharField(max_length=256, null=True, blank=True)
    # Paseo's row keys beside the item (``providerMessageId``, ``providerTimelineItemId``,
    # ``revertToken``), null when the row had none. ``revert_token`` is any JSON value:
    # SQL NULL when the row had no token, JSON ``null`` when it had a null one.
    provider_message_id = models.CharField(max_length=256, null=True, blank=True)
    provider_timeline_item_id = models.CharField(max_length=256, null=True, blank=True)
    revert_token = models.JSONField(null=True, blank=True)
    # NULL when the row has none (every row the API appends): adding the column then
    # rewrote no table, and the API renders it as {}.
    extra = models.JSONField(null=True, blank=True, help_text=EXTRA_HELP)

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
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}#{self.seq} {self.item_type}"
