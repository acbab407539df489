"""Reads of an agent's committed timeline.

Every read is a range scan of the (agent, seq) unique index bounded by
``limit``, so its cost does not grow with the length of the history. Seqs are
contiguous from 1 to ``head_seq``, which lets ``has_older``/``has_newer`` be
answered from the page itself without counting anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.core.exceptions import ValidationError

from kernel.errors import NotFound
from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow

Direction = Literal["tail", "before", "after"]
Projection = Literal["canonical", "projected"]
DEFAULT_READ_LIMIT = 200
MAX_READ_LIMIT = 1000
#: Runs of these item types collapse into one entry in the projected view.
MERGEABLE_TYPES = ("assistant_message", "reasoning")


@dataclass(frozen=True)
class TimelinePage:
    agent_id: str
    epoch: str
    head_seq: int
    direction: Direction
    rows: list[dict]
    min_seq: int | None
    max_seq: int | None
    has_older: bool
    has_newer: bool
    reset: bool

    @property
    def next_seq(self) -> int:
        """The seq the next committed row will get."""
        return self.head_seq + 1


#: What a page row carries, in the order the API renders it.
ROW_FIELDS = ("seq", "committed_at", "item_type", "item", "item_id")


def get_agent_for_timeline(*, agent_id: str) -> AgentSnapshot:
    agent = (
        AgentSnapshot.objects.filter(pk=agent_id).only("agent_id", "head_seq", "timeline_epoch", "archived_at").first()
    )
    if agent is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    return agent


def _timeline_head(agent_id: str) -> tuple[int, str]:
    """``(head_seq, timeline_epoch)`` of the agent, one indexed lookup without ordering."""
    found = list(AgentSnapshot.objects.filter(pk=agent_id).order_by().values_list("head_seq", "timeline_epoch")[:1])
    if not found:
        raise NotFound(f"Agent {agent_id} does not exist.")
    return found[0]


def _page_values(agent_id: str, direction: Direction, seq: int | None, limit: int) -> list[tuple]:
    """The page's rows in ascending seq, as plain tuples of ``ROW_FIELDS``: no model instances."""
    rows_qs = TimelineRow.objects.filter(agent_id=agent_id).values_list(*ROW_FIELDS)
    if direction == "tail":
        return list(rows_qs.order_by("-seq")[:limit])[::-1]
    if direction == "before":
        return list(rows_qs.filter(seq__lt=seq).order_by("-seq")[:limit])[::-1]
    return list(rows_qs.filter(seq__gt=seq).order_by("seq")[:limit])


def rows_after(*, agent_id: str, after_seq: int, limit: int) -> list[TimelineRow]:
    """Committed rows with seq > after_seq, ascending. The live stream's catch-up read."""
    return list(TimelineRow.objects.filter(agent_id=agent_id, seq__gt=after_seq).order_by("seq")[:limit])


def read_timeline(
    *,
    agent_id: str,
    direction: Direction = "tail",
    seq: int | None = None,
    limit: int = DEFAULT_READ_LIMIT,
    epoch: str | None = None,
    projection: Projection = "canonical",
) -> TimelinePage:
    if direction not in ("tail", "before", "after"):
        raise ValidationError({"direction": ["Use tail, before or after."]}, code="invalid")
    if projection not in ("canonical", "projected"):
        raise ValidationError({"projection": ["Use canonical or projected."]}, code="invalid")
    if not 1 <= limit <= MAX_READ_LIMIT:
        raise ValidationError({"limit": [f"limit is between 1 and {MAX_READ_LIMIT}."]}, code="invalid")
    if direction != "tail" and seq is None:
        raise ValidationError({"seq": [f"direction={direction} needs seq."]}, code="invalid")
    if seq is not None and seq < 0:
        raise ValidationError({"seq": ["seq is 0 or more."]}, code="invalid")

    head, timeline_epoch = _timeline_head(agent_id)
    reset = epoch is not None and epoch != timeline_epoch
    if reset:
        # The history was replaced: the client's seqs mean nothing now, so it
        # gets a fresh tail instead of silently wrong rows.
        direction, seq = "tail", None

    values = _page_values(agent_id, direction, seq, limit)
    entries = [dict(zip(ROW_FIELDS, row)) for row in values]

    first_seq = values[0][0] if values else None
    last_seq = values[-1][0] if values else None
    if values:
        has_older, has_newer = first_seq > 1, last_seq < head
    elif direction == "before":
        has_older, has_newer = False, head >= max(seq, 1)
    elif direction == "after":
        has_older, has_newer = head >= 1 and seq >= 1, False
    else:
        has_older = has_newer = False

    if projection == "projected":
        entries = project_rows(entries)
    return TimelinePage(
        agent_id=agent_id,
        epoch=timeline_epoch,
        head_seq=head,
        direction=direction,
        rows=entries,
        min_seq=first_seq,
        max_seq=last_seq,
        has_older=has_older,
        has_newer=has_newer,
        reset=reset,
    )


def project_rows(rows: list[dict]) -> list[dict]:
    """Merge each run of consecutive assistant_message (or reasoning) rows into one entry.

    Streaming agents commit a long answer as many small chunks; UIs want one
    bubble. Every entry carries ``seq_start``/``seq_end`` so a client can map
    it back to the canonical rows. A run cut by the page edge is merged only
    within the page.
    """
    projected: list[dict] = []
    for row in rows:
        previous = projected[-1] if projected else None
        if (
            previous is not None
            and row["item_type"] in MERGEABLE_TYPES
            and previous["item_type"] == row["item_type"]
            and previous["seq_end"] == row["seq"] - 1
        ):
            merged_item = dict(previous["item"])
            merged_item["text"] = f"{previous['item'].get('text', '')}{row['item'].get('text', '')}"
            previous.update(item=merged_item, seq_end=row["seq"], committed_at=row["committed_at"])
            previous["item_ids"].append(row["item_id"])
            continue
        projected.append(
            {
                "seq_start": row["seq"],
                "seq_end": row["seq"],
                "committed_at": row["committed_at"],
                "item_type": row["item_type"],
                "item": row["item"],
                "item_ids": [row["item_id"]],
            }
        )
    return projected
