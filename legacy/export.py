"""Write committed timelines in the chartr timeline JSONL format, streamed.

Reads only. Rows are fetched in seq order, one batch at a time (keyset on
seq), up to the head read at the start: rows are never changed once
committed, so that prefix is a consistent snapshot without holding a
transaction (which on SQLite would block every writer for the whole export).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from django.utils import timezone

from kernel.errors import Conflict, NotFound
from kernel.files import replaced_atomically
from legacy import jsonl
from snapshots.models import AgentSnapshot
from timeline.models import ROW_FIELDS, TimelineHead, TimelineRow, has_revert_token

EXPORT_BATCH = 5000


def timeline_lines(*, agent_id: str) -> Iterator[str]:
    """The header, then one line per committed row; raises Conflict if the
    agent's history was replaced while it was being read."""
    state = TimelineHead.objects.filter(pk=agent_id).values("epoch", "head_seq", "min_seq").first()
    if state is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    epoch, head, min_seq = state["epoch"], state["head_seq"], state["min_seq"]
    yield jsonl.header_line(agent_id=agent_id, epoch=epoch, exported_at=timezone.now(), min_seq=min_seq)
    last = min_seq - 1
    while last < head:
        rows = committed_rows(agent_id, after=last, head=head, limit=EXPORT_BATCH)
        if not rows:
            break
        for row in rows:
            yield jsonl.row_line(**row)
        last = rows[-1]["seq"]
    if TimelineHead.objects.filter(pk=agent_id).values_list("epoch", flat=True).first() != epoch:
        raise Conflict(f"Agent {agent_id}'s history was replaced during the export; export it again.")


#: A row's columns as a line holds them: every one but ``item_type``, which is its item's own.
ROW_KEYS = tuple(name for name in ROW_FIELDS if name != "item_type")


def committed_rows(agent_id: str, *, after: int, head: int, limit: int) -> list[dict]:
    """Up to ``limit`` rows after seq ``after`` (up to ``head``), ascending, with every key;
    ``has_revert_token`` tells a null token (JSON null) from none (SQL NULL)."""
    return list(
        TimelineRow.objects.filter(agent_id=agent_id, seq__gt=after, seq__lte=head)
        .order_by("seq")
        .annotate(has_revert_token=has_revert_token())
        .values(*ROW_KEYS, "has_revert_token")[:limit]
    )


def write_timeline(*, agent_id: str, out: TextIO) -> int:
    """Write one agent's timeline to ``out``; returns the number of rows."""
    rows = -1
    for line in timeline_lines(agent_id=agent_id):
        out.write(line)
        rows += 1
    return rows


def write_timeline_file(*, agent_id: str, path: Path) -> int:
    """Write to ``path`` atomically (``kernel.files.replaced_atomically``)."""
    with replaced_atomically(Path(path)) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        return write_timeline(agent_id=agent_id, out=handle)


def write_all_timelines(*, out_dir: Path) -> list[tuple[str, int]]:
    """One ``<agent_id>.jsonl`` per agent (archived ones too) in ``out_dir``,
    the layout ``import_legacy_json`` reads from ``timelines/``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for agent_id in list(AgentSnapshot.objects.order_by("agent_id").values_list("agent_id", flat=True)):
        written.append((agent_id, write_timeline_file(agent_id=agent_id, path=out_dir / f"{agent_id}.jsonl")))
    return written
