"""Reads of imported Codex threads. Nothing here writes."""

from __future__ import annotations

from collections.abc import Iterator

from codex.models import CodexThread
from snapshots.models import AgentSnapshot
from timeline.items import foreign_record
from timeline.models import TimelineRow

#: Rows read per query when an export streams a thread's timeline.
EXPORT_CHUNK = 2000


def codex_agent(agent_id: str) -> AgentSnapshot | None:
    return AgentSnapshot.objects.filter(pk=agent_id).first()


def codex_threads() -> Iterator[CodexThread]:
    return CodexThread.objects.order_by("agent_id").iterator(chunk_size=500)


def thread_records(state: CodexThread) -> list[dict]:
    """The Codex records of the thread's rows ``first_seq`` .. ``first_seq + lines - 1``, in order
    (fewer when rows were trimmed or are not Codex records)."""
    rows = (
        TimelineRow.objects.filter(
            agent_id=state.agent_id, seq__gte=state.first_seq, seq__lt=state.first_seq + state.lines
        )
        .order_by("seq")
        .values_list("item", flat=True)
        .iterator(chunk_size=EXPORT_CHUNK)
    )
    records = (foreign_record(item, "codex") for item in rows)
    return [record for record in records if record is not None]


def agent_codex_records(agent_id: str) -> tuple[int, list[dict]] | None:
    """The first retained seq of the agent's timeline and the Codex records of all its rows, in order;
    None when a row is not a Codex record."""
    items = TimelineRow.objects.filter(agent_id=agent_id).order_by("seq").values_list("seq", "item")
    first_seq, records = None, []
    for seq, item in items.iterator(chunk_size=EXPORT_CHUNK):
        record = foreign_record(item, "codex")
        if record is None:
            return None
        first_seq = seq if first_seq is None else first_seq
        records.append(record)
    return (first_seq or 1), records
