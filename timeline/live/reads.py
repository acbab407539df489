"""The database reads the live stream needs, and the thread pool that runs them off the event loop.

Every function here is blocking ORM code; the hub runs it through
:class:`DatabaseRunner`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from django.db import DatabaseError, connections
from django.db.models import F

from snapshots.models import AgentSnapshot
from timeline.live.sse import AGENT_STATE_FIELDS, encode_committed_row
from timeline.models import ROW_FIELDS, TimelineRow, TimelineRowRevision
from timeline.selectors import RetainedRange, rows_after

T = TypeVar("T")

#: The agent's timeline head's fields beside ``AGENT_STATE_FIELDS`` (one query), by the names the event gives them.
HEAD_STATE_FIELDS = {
    "head_seq": F("timeline_head__head_seq"),
    "min_seq": F("timeline_head__min_seq"),
    "timeline_epoch": F("timeline_head__epoch"),
    # Not sent: whether the history has holes (``RetainedRange.has_holes``).
    "committed_rows": F("timeline_head__committed_rows"),
    # Not sent either: the updates so far, for the streams that take them (``updates=1``).
    "update_seq": F("timeline_head__update_seq"),
}

#: Agents per ``IN`` list when polling heads, so the list stays bounded.
HEADS_PER_QUERY = 500


@dataclass
class LiveBatch:
    """What one database read saw: rows after a seq (pre-encoded SSE frames) and the agent's state.

    ``agent`` is None when the agent no longer exists.
    """

    rows: list[tuple[int, bytes]]
    agent: dict | None
    #: ``seq -> update_seq`` of the rows read whose content an update wrote (for ``updates=1`` streams).
    row_updates: dict[int, int] = field(default_factory=dict)

    @cached_property
    def retained(self) -> RetainedRange:
        """The rows the agent held when read (a shared read's subscribers all ask; one answer)."""
        assert self.agent is not None
        agent = self.agent
        return RetainedRange(
            min_seq=agent["min_seq"], head_seq=agent["head_seq"], committed_rows=agent["committed_rows"]
        )


def read_agent_state(agent_id: str) -> dict | None:
    """The agent snapshot fields an ``agent`` event carries, with its head's, or None if the agent is gone."""
    return AgentSnapshot.objects.filter(pk=agent_id).values(*AGENT_STATE_FIELDS, **HEAD_STATE_FIELDS).first()


def read_batch(agent_id: str, after_seq: int, limit: int) -> LiveBatch:
    """Up to ``limit`` committed rows after ``after_seq``, then the agent's state."""
    rows = rows_after(agent_id=agent_id, after_seq=after_seq, limit=limit) if limit else []
    # The agent is read after the rows: if its epoch is still the one the
    # reader holds, the history was not replaced before the rows were read.
    agent = read_agent_state(agent_id)
    return LiveBatch(
        rows=[(row.seq, encode_committed_row(row)) for row in rows],
        agent=agent,
        row_updates={row.seq: row.update_seq for row in rows if row.update_seq is not None},
    )


@dataclass(frozen=True)
class LiveUpdate:
    """One update of a committed row: its number, the row's seq, and the content it wrote (an ``updated`` event's data)."""

    update_seq: int
    seq: int
    data: dict


#: What an ``updated`` event carries of a row or of the revision an update wrote, besides its seq and item id.
_UPDATE_FIELDS = ("update_seq", *(name for name in ROW_FIELDS if name not in ("seq", "item_id")), "revision")


def read_updates(agent_id: str, after_update: int, limit: int) -> list[LiveUpdate]:
    """The agent's first ``limit`` row updates numbered above ``after_update``, in order, each with
    the content it wrote: the row's current content for its latest update, the revision the next
    update replaced for an earlier one. Two index ranges (``timeline_agent_update_idx``,
    ``timeline_revision_update_idx``), merged."""
    current = TimelineRow.objects.filter(agent_id=agent_id, update_seq__gt=after_update).order_by("update_seq")
    earlier = TimelineRowRevision.objects.filter(agent_id=agent_id, update_seq__gt=after_update).order_by("update_seq")
    found = [
        *current.values("seq", "item_id", *_UPDATE_FIELDS)[:limit],
        *earlier.values(*_UPDATE_FIELDS, seq=F("row__seq"), item_id=F("row__item_id"))[:limit],
    ]
    found.sort(key=lambda update: update["update_seq"])
    return [
        LiveUpdate(update_seq=update["update_seq"], seq=update["seq"], data=_update_data(update))
        for update in found[:limit]
    ]


def _update_data(update: dict) -> dict:
    data = {key: update[key] for key in (*ROW_FIELDS, "revision")}
    data["extra"] = data["extra"] or {}
    return data


def read_heads(agent_ids: list[str]) -> dict[str, tuple[int, str, int, int]]:
    """``agent_id -> (head_seq, timeline_epoch, version, update_seq)`` for the agents that still exist."""
    heads: dict[str, tuple[int, str, int, int]] = {}
    for start in range(0, len(agent_ids), HEADS_PER_QUERY):
        rows = AgentSnapshot.objects.filter(pk__in=agent_ids[start : start + HEADS_PER_QUERY]).values_list(
            "agent_id", "timeline_head__head_seq", "timeline_head__epoch", "version", "timeline_head__update_seq"
        )
        heads.update((agent_id, (head, epoch, version, updates)) for agent_id, head, epoch, version, updates in rows)
    return heads


class DatabaseRunner:
    """Runs blocking ORM calls for the live stream on a small dedicated pool.

    Each thread keeps its own connection between calls, so the number of
    database connections the streams use is bounded by the pool size, not by
    the number of open streams. A connection that broke (database restart) is
    closed and the call retried once.
    """

    def __init__(self, *, threads: int):
        self.threads = threads
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="chartr-live-db")

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: self._call(fn, args, kwargs))

    @staticmethod
    def _call(fn, args, kwargs):
        try:
            return fn(*args, **kwargs)
        except DatabaseError:
            connection = connections["default"]
            if connection.in_atomic_block:
                raise
            connection.close()
            return fn(*args, **kwargs)

    def shutdown(self) -> None:
        """Close every pool thread's connection (PostgreSQL will not drop a
        database that still has sessions), then stop the threads."""
        barrier = threading.Barrier(self.threads)

        def close_here() -> None:
            connections.close_all()
            try:
                # Holding each task until all have started puts one on every thread.
                barrier.wait(timeout=2)
            except threading.BrokenBarrierError:
                pass

        for _ in range(self.threads):
            self._executor.submit(close_here)
        self._executor.shutdown(wait=True)
