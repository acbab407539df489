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


def row_as_dict(row: TimelineRow) -> dict:
    return {
        "seq": row.seq,
        "committed_at": row.committed_at,
        "item_type": row.item_type,
        "item": row.item,
        "item_id": row.item_id,
    }


def get_agent_for_timeline(*, agent_id: str) -> AgentSnapshot:
    agent = (
        AgentSnapshot.objects.filter(pk=agent_id).only("agent_id", "head_seq", "timeline_epoch", "archived_at").first()
    )
    if agent is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    return agent


def rows_after(*, agent_id: str, after_seq: int, limit: int) -> list[TimelineRow]:
    """Committed rows with seq > after_seq, ascending. The live stream's catch-up read."""
    return list(TimelineRow.objects.filter(agent_id=agent_id, seq__gt=after_seq).order_by("seq")[:limit])


def check_read_arguments(*, projection: str, limit: int, seq: int | None) -> None:
    if projection not in ("canonical", "projected"):
        raise ValidationError({"projection": ["Use canonical or projected."]}, code="invalid")
    if not 1 <= limit <= MAX_READ_LIMIT:
        raise ValidationError({"limit": [f"limit is between 1 and {MAX_READ_LIMIT}."]}, code="invalid")
    if seq is not None and seq < 0:
        raise ValidationError({"seq": ["seq is 0 or more."]}, code="invalid")


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
    check_read_arguments(projection=projection, limit=limit, seq=seq)

    agent = get_agent_for_timeline(agent_id=agent_id)
    reset = epoch is not None and epoch != agent.timeline_epoch
    if reset:
        # The history was replaced: the client's seqs mean nothing now, so it
        # gets a fresh tail instead of silently wrong rows.
        direction, seq = "tail", None
    elif seq is None:
        # Without a seq, `after` reads from the start and `before` from the head.
        seq = 0 if direction == "after" else agent.head_seq + 1

    rows_qs = TimelineRow.objects.filter(agent_id=agent.pk)
    if direction == "tail":
        rows = list(rows_qs.order_by("-seq")[:limit])[::-1]
    elif direction == "before":
        rows = list(rows_qs.filter(seq__lt=seq).order_by("-seq")[:limit])[::-1]
    else:
        rows = list(rows_qs.filter(seq__gt=seq).order_by("seq")[:limit])

    head = agent.head_seq
    if rows:
        has_older, has_newer = rows[0].seq > 1, rows[-1].seq < head
    elif direction == "before":
        has_older, has_newer = False, head >= max(seq, 1)
    elif direction == "after":
        has_older, has_newer = head >= 1 and seq >= 1, False
    else:
        has_older = has_newer = False

    entries = [row_as_dict(row) for row in rows]
    if projection == "projected":
        entries = project_rows(entries)
    return TimelinePage(
        agent_id=agent.pk,
        epoch=agent.timeline_epoch,
        head_seq=head,
        direction=direction,
        rows=entries,
        min_seq=rows[0].seq if rows else None,
        max_seq=rows[-1].seq if rows else None,
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
