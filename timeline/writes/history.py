"""Paseo's store writes beside the append: rows at their own seqs, a whole history replaced or
dropped, and the backfill that replays a provider's transcript.

- ``insert_rows`` (Paseo's ``bulkInsert``): rows go in at the seqs they carry, above the head.
  A row already committed at its seq with the same content is a no-op; any other row at a seq
  the timeline has used (held, a hole, or pruned) is ``seq_conflict``, so a live reader, which
  reads "seq > cursor", never misses a row. One transaction: nothing is half-written.
  A call takes any number of rows (the request body's limit, ``CHARTR_MAX_BODY_BYTES``, bounds
  them): they go in through the bulk append in batches (``BULK_APPEND_BATCH`` rows each, by
  ``executemany`` of one single-row INSERT), the stored rows they repeat are read ``ID_CHUNK``
  seqs at a time, and the live stream is told once, so statements and memory stay bounded
  on both databases.
- ``replace_rows`` (``replaceCommitted``): the rows become exactly these, in a new epoch, so every
  old cursor is stale. The same rows again change nothing (the epoch stays).
- ``delete_history`` (``deleteAgent``, for the timeline; the agent stays): no rows, a new epoch,
  seqs from 1 again. A timeline that never used a seq in its epoch is left as it is.
- ``begin_backfill`` / ``complete_backfill``: as Paseo's SQLite store, begin drops every row and
  keeps the epoch (the replay assigns seqs from 1 again), and until completion the head says
  ``backfilling`` and so do the pages.

Every write locks the timeline head (``timeline.writes.head.lock_agent``), refuses an archived
agent, moves the head and its counters in the same transaction and tells the live stream
(``timeline.signals``) once it commits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from timeline.errors import SeqConflict
from timeline.items import check_item_size, new_item_problems
from timeline.models import TimelineHead, TimelineRow, has_revert_token
from timeline.rows import ReadRow
from timeline.services import announce, bulk_append_timeline_rows
from timeline.writes.head import AgentHead, lock_agent
from timeline.writes.idempotency import ID_CHUNK
from timeline.writes.revisions import NO_TOKEN, RowContent, holds

#: The highest seq a row may carry: JavaScript's Number.MAX_SAFE_INTEGER, where Paseo's seqs live.
MAX_ROW_SEQ = 2**53 - 1


@dataclass(frozen=True)
class HistoryResult:
    """What a history write left: the head, its epoch, and what the call changed."""

    agent_id: str
    epoch: str
    head_seq: int
    min_seq: int
    backfilling: bool
    #: rows inserted (``insert_rows``, ``replace_rows``) or deleted (``delete_history``, ``begin_backfill``)
    rows: int
    #: whether the call changed anything (False: a repeat)
    changed: bool


def new_history_epoch() -> str:
    """A fresh epoch as Paseo mints one (``randomUUID()``): 36 characters."""
    return str(uuid.uuid4())


def check_store_rows(rows: Sequence[ReadRow], *, allow_empty: bool = False) -> list[ReadRow]:
    """``rows`` checked as the append checks items, in seq order; ``ValidationError`` names each bad one.

    Any number of rows (at least one unless ``allow_empty``): the request body's limit bounds them."""
    if not rows and not allow_empty:
        raise ValidationError({"rows": ["Send at least one row."]}, code="invalid")
    errors: dict[str, list[str]] = {}
    seen: dict[int, int] = {}
    for index, row in enumerate(rows):
        if not 1 <= row.seq <= MAX_ROW_SEQ:
            errors[f"rows[{index}].seq"] = [f"seq is between 1 and {MAX_ROW_SEQ}."]
        elif row.seq in seen:
            errors[f"rows[{index}].seq"] = [f"seq {row.seq} repeats rows[{seen[row.seq]}].seq in the same call."]
        seen.setdefault(row.seq, index)
        for problem in new_item_problems(row.item, None, encoded=row.item_json).get("item", []):
            errors.setdefault(f"rows[{index}].item", []).append(problem)
    if errors:
        raise ValidationError(errors, code="invalid")
    for index, row in enumerate(rows):
        check_item_size(row.item, index=index, encoded=row.item_json)
    return sorted(rows, key=lambda row: row.seq)


# --- bulkInsert ---------------------------------------------------------------


def insert_rows(*, agent_id: str, rows: Sequence[ReadRow]) -> HistoryResult:
    """Commit ``rows`` at their own seqs (Paseo's ``bulkInsert``), all or nothing; see the module."""
    rows = check_store_rows(rows)
    now = timezone.now()
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=False)
        new = _rows_not_yet_committed(agent, rows)
        if new:
            start_seq = new[0].seq if agent.min_seq > agent.head_seq else None
            bulk_append_timeline_rows(agent_id=agent_id, rows=new, start_seq=start_seq, keep_seqs=True, alive_at=now)
        return _result(agent_id, rows=len(new), changed=bool(new))


def _rows_not_yet_committed(agent: AgentHead, rows: list[ReadRow]) -> list[ReadRow]:
    """The rows above the head; refuses any other row not committed as it is at its seq."""
    below = [row for row in rows if row.seq <= agent.head_seq]
    stored = _stored_rows(agent.agent_id, [row.seq for row in below])
    for row in below:
        found = stored.get(row.seq)
        if found is None or not same_row(found, row):
            held = "holds another row" if found is not None else "is not held (a hole, or pruned)"
            raise SeqConflict(
                f"seq {row.seq} {held}, at or below agent {agent.agent_id}'s head {agent.head_seq}: "
                "a row already committed is only repeated as it is, new rows go in above the head.",
                extra={"seq": row.seq, "head_seq": agent.head_seq},
            )
    return [row for row in rows if row.seq > agent.head_seq]


def _stored_rows(agent_id: str, seqs: list[int]) -> dict[int, TimelineRow]:
    has_token = has_revert_token()
    found: dict[int, TimelineRow] = {}
    for start in range(0, len(seqs), ID_CHUNK):
        chunk = seqs[start : start + ID_CHUNK]
        rows = TimelineRow.objects.filter(agent_id=agent_id, seq__in=chunk).annotate(has_revert_token=has_token)
        found.update((row.seq, row) for row in rows)
    return found


def same_row(stored: TimelineRow, row: ReadRow) -> bool:
    """Whether ``stored`` (read with ``has_revert_token``) is ``row``: item, time and every row key."""
    token = NO_TOKEN if row.revert_token_json is None else json.loads(row.revert_token_json)
    keys = ("committed_at", "turn_id", "provider_message_id", "provider_timeline_item_id")
    return holds(stored, RowContent(item=row.item, revert_token=token, **{key: getattr(row, key) for key in keys}))


# --- replaceCommitted and deleteAgent -------------------------------------------


def replace_rows(*, agent_id: str, rows: Sequence[ReadRow]) -> HistoryResult:
    """Make the agent's rows exactly ``rows`` (Paseo's ``replaceCommitted``) in a new epoch; see the module."""
    rows = check_store_rows(rows, allow_empty=True)
    now = timezone.now()
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=False)
        if _holds_exactly(agent, rows):
            return _result(agent_id, rows=0, changed=False)
        epoch = new_history_epoch()
        _drop_rows(agent, epoch=epoch)
        if rows:
            bulk_append_timeline_rows(
                agent_id=agent_id, rows=rows, start_seq=rows[0].seq, epoch=epoch, keep_seqs=True, alive_at=now
            )
        else:
            announce(agent_id=agent_id, head_seq=0, epoch=epoch)
        return _result(agent_id, rows=len(rows), changed=True)


def _holds_exactly(agent: AgentHead, rows: list[ReadRow]) -> bool:
    """Whether the timeline already holds exactly ``rows`` (a repeated replace)."""
    if TimelineHead.objects.filter(pk=agent.agent_id).values_list("committed_rows", flat=True).get() != len(rows):
        return False
    if not rows:
        return agent.head_seq == 0
    stored = _stored_rows(agent.agent_id, [row.seq for row in rows])
    return len(stored) == len(rows) and all(same_row(stored[row.seq], row) for row in rows)


def delete_history(*, agent_id: str) -> HistoryResult:
    """Drop every row of the agent's timeline and start a new epoch at seq 1 (Paseo's ``deleteAgent``).

    A timeline that has used no seq in its epoch is left as it is, so a repeat changes nothing."""
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=False)
        if agent.head_seq == 0:
            return _result(agent_id, rows=0, changed=False)
        epoch = new_history_epoch()
        deleted = _drop_rows(agent, epoch=epoch)
        announce(agent_id=agent_id, head_seq=0, epoch=epoch)
        return _result(agent_id, rows=deleted, changed=True)


def _drop_rows(agent: AgentHead, *, epoch: str, backfilling: bool = False) -> int:
    """Delete every row of ``agent`` (locked) and empty its head at seq 0 in ``epoch``; how many rows."""
    deleted, _ = TimelineRow.objects.filter(agent_id=agent.agent_id).delete()
    TimelineHead.objects.filter(pk=agent.agent_id).update(
        head_seq=0, min_seq=1, epoch=epoch, committed_rows=0, committed_bytes=0, backfilling=backfilling
    )
    return deleted


# --- beginBackfill and completeBackfill ---------------------------------------


def begin_backfill(*, agent_id: str) -> HistoryResult:
    """Drop every row and mark the timeline ``backfilling``, keeping its epoch (Paseo's ``beginBackfill``).

    The replay that follows inserts its rows from seq 1 (``insert_rows``). Begun again before
    completion, it drops what the replay inserted so far, as Paseo's does."""
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=False)
        backfilling = TimelineHead.objects.filter(pk=agent_id).values_list("backfilling", flat=True).get()
        if backfilling and agent.head_seq == 0:
            return _result(agent_id, rows=0, changed=False)
        deleted = _drop_rows(agent, epoch=agent.timeline_epoch, backfilling=True)
        announce(agent_id=agent_id, head_seq=0, epoch=agent.timeline_epoch)
        return _result(agent_id, rows=deleted, changed=True)


def complete_backfill(*, agent_id: str) -> HistoryResult:
    """Mark the rows as the whole conversation again (Paseo's ``completeBackfill``); a repeat changes nothing."""
    with transaction.atomic():
        lock_agent(agent_id, allow_archived=False)
        changed = TimelineHead.objects.filter(pk=agent_id, backfilling=True).update(backfilling=False)
        return _result(agent_id, rows=0, changed=bool(changed))


# --- shared -------------------------------------------------------------------


def _result(agent_id: str, *, rows: int, changed: bool) -> HistoryResult:
    head = TimelineHead.objects.filter(pk=agent_id).values("epoch", "head_seq", "min_seq", "backfilling").get()
    return HistoryResult(agent_id=agent_id, rows=rows, changed=changed, **head)
