"""The one way rows enter an agent's committed timeline.

Two entry points share one core, so the rules exist once:

- ``append_timeline_items``: the API's append (items checked here, idempotent
  ``item_id``, optional ``expected_head_seq``, archived agents refused);
- ``bulk_append_timeline_rows``: rows already checked by the caller (the
  legacy importer), streamed in batches, inside the caller's transaction when
  there is one.

The core (``_lock_agent`` then ``_append_locked``): lock the agent row, give
the rows seq head+1, head+2, ... in order, insert them, move ``head_seq`` and
send ``timeline_committed`` once the outermost transaction commits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from kernel.errors import ArchivedConflict, NotFound, SeqConflict
from snapshots.models import AgentSnapshot
from timeline.items import check_item_size, new_item_problems
from timeline.models import TimelineRow
from timeline.search import timeline_search
from timeline.signals import timeline_committed

MAX_ITEMS_PER_APPEND = 500
#: Rows per INSERT batch of a bulk append: big enough to amortise the round
#: trip, small enough that memory stays flat however many rows stream in.
BULK_APPEND_BATCH = 5000


@dataclass(frozen=True)
class NewTimelineItem:
    item: dict
    item_id: str | None = None


class CheckedRow(Protocol):
    """A row its caller has already checked, not yet given a seq."""

    @property
    def item(self) -> dict: ...
    @property
    def item_type(self) -> str: ...
    @property
    def item_id(self) -> str | None: ...
    @property
    def committed_at(self) -> dt.datetime: ...


@dataclass(frozen=True)
class PendingRow:
    """The plain ``CheckedRow``: what the API append stores for a new item."""

    item: dict
    item_type: str
    item_id: str | None
    committed_at: dt.datetime


@dataclass(frozen=True)
class CommittedRow:
    seq: int
    committed_at: object
    item_id: str | None


@dataclass(frozen=True)
class AppendResult:
    rows: list[CommittedRow]
    head_seq: int
    epoch: str
    created: int
    #: Rows of this call that had been committed before (idempotent retries).
    replayed: int = field(default=0)


@dataclass(frozen=True)
class BulkAppendResult:
    #: the seq of the first appended row (head_seq + 1 when nothing was appended)
    first_seq: int
    head_seq: int
    epoch: str

    @property
    def created(self) -> int:
        return self.head_seq - self.first_seq + 1


def validate_new_items(items: Sequence[NewTimelineItem]) -> None:
    """Check the whole batch before touching the database, so a bad item stores nothing."""
    if not 1 <= len(items) <= MAX_ITEMS_PER_APPEND:
        raise ValidationError({"items": [f"Send between 1 and {MAX_ITEMS_PER_APPEND} items per call."]}, code="invalid")
    errors: dict[str, list[str]] = {}
    seen_ids: dict[str, int] = {}
    for index, new in enumerate(items):
        for name, problems in new_item_problems(new.item, new.item_id).items():
            errors[f"items[{index}].{name}"] = problems
        if new.item_id is not None and f"items[{index}].item_id" not in errors:
            if new.item_id in seen_ids:
                errors[f"items[{index}].item_id"] = [
                    f"item_id repeats items[{seen_ids[new.item_id]}].item_id in the same call."
                ]
            seen_ids[new.item_id] = index
    if errors:
        raise ValidationError(errors, code="invalid")
    for index, new in enumerate(items):
        check_item_size(new.item, index=index)


def append_timeline_items(
    *, agent_id: str, items: Sequence[NewTimelineItem], expected_head_seq: int | None = None
) -> AppendResult:
    """Commit ``items`` to the agent's timeline as seq head+1, head+2, ... atomically.

    Seq assignment is serialised per agent: the agent row is locked
    (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the IMMEDIATE
    transaction already holds the write lock), the head is read, rows are
    bulk-inserted and the head moves, all in one transaction. The unique
    (agent, seq) constraint is only the backstop.

    An item whose ``item_id`` is already committed is not stored again; its
    original seq is returned, so a client retrying after a timeout never
    creates a duplicate. When every item was already committed the call
    succeeds whatever ``expected_head_seq`` says, for the same reason.
    """
    validate_new_items(items)
    with transaction.atomic():
        agent = _lock_agent(agent_id, allow_archived=False)
        committed = _committed_by_item_id(agent, items)
        new_items = [new for new in items if new.item_id is None or new.item_id not in committed]
        if new_items:
            _check_expected_head(agent, expected_head_seq)
        now = timezone.now()
        first_seq = agent.head_seq + 1
        pending = [
            PendingRow(item=new.item, item_type=new.item["type"], item_id=new.item_id, committed_at=now)
            for new in new_items
        ]
        _append_locked(agent, pending, batch_size=MAX_ITEMS_PER_APPEND)
    return AppendResult(
        rows=_rows_in_call_order(items, committed, first_seq=first_seq, committed_at=now),
        head_seq=agent.head_seq,
        epoch=agent.timeline_epoch,
        created=len(new_items),
        replayed=len(items) - len(new_items),
    )


def bulk_append_timeline_rows(
    *,
    agent_id: str,
    rows: Iterable[CheckedRow],
    expected_head_seq: int | None = None,
    allow_archived: bool = False,
    batch_size: int = BULK_APPEND_BATCH,
    on_batch: Callable[[int], None] | None = None,
) -> BulkAppendResult:
    """Append already-checked ``rows`` (any iterable, consumed in batches of
    ``batch_size``) to the agent's timeline as seq head+1, head+2, ...

    The same rules as ``append_timeline_items``: the agent row is locked, seq
    stays contiguous, ``head_seq`` moves, and ``timeline_committed`` is sent
    once, after the outermost transaction commits (never on a rollback).
    Called inside the caller's transaction it runs in a savepoint, so the
    caller's all-or-nothing holds; rows are not checked for idempotency, and
    a repeated ``item_id`` raises ``IntegrityError``.

    ``allow_archived`` lets the legacy importer carry history into agents the
    legacy data marks archived; the API append refuses them.
    ``on_batch(count)`` is called after each batch is inserted.
    """
    with transaction.atomic():
        agent = _lock_agent(agent_id, allow_archived=allow_archived)
        _check_expected_head(agent, expected_head_seq)
        first_seq = agent.head_seq + 1
        _append_locked(agent, rows, batch_size=batch_size, on_batch=on_batch)
    return BulkAppendResult(first_seq=first_seq, head_seq=agent.head_seq, epoch=agent.timeline_epoch)


# --- the core ---------------------------------------------------------------


@dataclass
class _AgentHead:
    """The bookkeeping columns of an agent row locked for an append."""

    agent_id: str
    head_seq: int
    timeline_epoch: str


def _agent_column(name: str) -> str:
    return connection.ops.quote_name(AgentSnapshot._meta.get_field(name).column)


def _lock_agent(agent_id: str, *, allow_archived: bool) -> _AgentHead:
    """Read the agent's head under a lock held until the transaction ends.

    ``SELECT ... FOR UPDATE`` where the backend has it (PostgreSQL); SQLite
    has no row locks, and its IMMEDIATE transaction already holds the write
    lock. Plain SQL rather than querysets, here and in ``_save_head``: on the
    shared 2-core machine the queryset versions cost about 0.9 and 0.35 ms of
    CPU per call against 0.06 ms each, which made a legacy import (one call
    per agent) about 20% slower at 100 rows per agent.
    """
    lock = f" {connection.ops.for_update_sql()}" if connection.features.has_select_for_update else ""
    sql = (
        f"SELECT {_agent_column('head_seq')}, {_agent_column('timeline_epoch')}, {_agent_column('archived_at')} "
        f"FROM {connection.ops.quote_name(AgentSnapshot._meta.db_table)} WHERE {_agent_column('agent_id')} = %s{lock}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent_id])
        found = cursor.fetchone()
    if found is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    head_seq, epoch, archived_at = found
    if archived_at is not None and not allow_archived:
        raise ArchivedConflict(f"Agent {agent_id} is archived; its timeline is closed.")
    return _AgentHead(agent_id=agent_id, head_seq=head_seq, timeline_epoch=epoch)


def _save_head(agent: _AgentHead) -> None:
    """Move the stored head to ``agent.head_seq`` (plain SQL for the reason in ``_lock_agent``)."""
    sql = (
        f"UPDATE {connection.ops.quote_name(AgentSnapshot._meta.db_table)} SET {_agent_column('head_seq')} = %s "
        f"WHERE {_agent_column('agent_id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent.head_seq, agent.agent_id])


def _check_expected_head(agent: _AgentHead, expected_head_seq: int | None) -> None:
    if expected_head_seq is not None and expected_head_seq != agent.head_seq:
        raise SeqConflict(
            f"Expected head_seq {expected_head_seq}, but agent {agent.agent_id} is at {agent.head_seq}.",
            extra={"head_seq": agent.head_seq},
        )


def _append_locked(
    agent: _AgentHead,
    rows: Iterable[CheckedRow],
    *,
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """Insert ``rows`` after the head of ``agent``, whose row the caller has
    locked in the current transaction, then move the head and announce it."""
    start_head = agent.head_seq
    for batch in _batches(rows, batch_size):
        _insert_batch(agent_id=agent.agent_id, first_seq=agent.head_seq + 1, rows=batch)
        _index_for_search(agent_id=agent.agent_id, first_seq=agent.head_seq + 1, last_seq=agent.head_seq + len(batch))
        agent.head_seq += len(batch)
        if on_batch is not None:
            on_batch(len(batch))
    if agent.head_seq == start_head:
        return
    _save_head(agent)
    agent_id, head, epoch = agent.agent_id, agent.head_seq, agent.timeline_epoch
    transaction.on_commit(
        lambda: timeline_committed.send(sender=TimelineRow, agent_id=agent_id, head_seq=head, epoch=epoch)
    )


def _batches(rows: Iterable[CheckedRow], size: int) -> Iterator[list[CheckedRow]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


_ROW_COLUMNS = ("agent", "seq", "committed_at", "item_type", "item", "item_id")


def _insert_batch(*, agent_id: str, first_seq: int, rows: Sequence[CheckedRow]) -> None:
    """Insert ``rows`` as seq first_seq, first_seq+1, ... with one ``executemany``.

    ``bulk_create`` compiles multi-row INSERTs field by field (on SQLite at
    most 166 rows of 6 parameters each, so 6,000 statements for 1M rows); one
    prepared INSERT run by ``executemany`` made the whole legacy import about
    25% faster (docs/benchmarks.md). Values are adapted by the same field and
    backend methods the ORM uses, so the stored values are the same.
    """
    ops = connection.ops
    meta = TimelineRow._meta
    item_field = meta.get_field("item")
    columns = ", ".join(ops.quote_name(meta.get_field(name).column) for name in _ROW_COLUMNS)
    sql = f"INSERT INTO {ops.quote_name(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(_ROW_COLUMNS))})"
    params = [
        (
            agent_id,
            seq,
            ops.adapt_datetimefield_value(row.committed_at),
            row.item_type,
            item_field.get_db_prep_save(row.item, connection),
            row.item_id,
        )
        for seq, row in enumerate(rows, first_seq)
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


# --- the search index -------------------------------------------------------


def _index_for_search(*, agent_id: str, first_seq: int, last_seq: int) -> None:
    """Make the rows just inserted searchable, in the transaction that inserted
    them: both appends come through here, so a committed row is always
    searchable (SQLite's FTS5 table; PostgreSQL's expression index needs nothing)."""
    timeline_search().index_rows(agent_id=agent_id, first_seq=first_seq, last_seq=last_seq)


# --- the API append's idempotency -------------------------------------------


def _committed_by_item_id(agent: _AgentHead, items: Sequence[NewTimelineItem]) -> dict[str, TimelineRow]:
    """The rows already committed under the item ids of this call (read under the agent's lock)."""
    wanted_ids = [new.item_id for new in items if new.item_id is not None]
    if not wanted_ids:
        return {}
    stored = TimelineRow.objects.filter(agent_id=agent.agent_id, item_id__in=wanted_ids).only(
        "seq", "committed_at", "item_id"
    )
    return {row.item_id: row for row in stored}


def _rows_in_call_order(
    items: Sequence[NewTimelineItem],
    committed: dict[str, TimelineRow],
    *,
    first_seq: int,
    committed_at: dt.datetime,
) -> list[CommittedRow]:
    """One entry per item, in call order: the stored row for a retry, the new row otherwise."""
    rows: list[CommittedRow] = []
    next_seq = first_seq
    for new in items:
        stored = committed.get(new.item_id) if new.item_id is not None else None
        if stored is not None:
            rows.append(CommittedRow(seq=stored.seq, committed_at=stored.committed_at, item_id=stored.item_id))
        else:
            rows.append(CommittedRow(seq=next_seq, committed_at=committed_at, item_id=new.item_id))
            next_seq += 1
    return rows
