"""The one way rows enter an agent's committed timeline.

Two entry points share one core, so the rules exist once:

- ``append_timeline_items``: the API's append (items checked here, idempotent
  ``item_id`` with ``item_conflict`` when the content differs, optional
  ``expected_head_seq``, archived agents refused);
- ``bulk_append_timeline_rows``: rows already checked by the caller (the
  legacy importer), streamed in batches, inside the caller's transaction when
  there is one.

The core (``timeline.writes.head.lock_agent``, then ``_append_locked``): lock the agent's
timeline head (``timeline.models.TimelineHead``), give
the rows seq head+1, head+2, ... in order, insert them, move ``head_seq`` and
the activity times (``last_activity_at``, ``last_user_message_at``) in the
same transaction, and send ``timeline_committed`` once the outermost
transaction commits. ``min_seq`` (the first retained seq) moves only when a
history is carried over (``start_seq``); appends never move it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Protocol

from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import timezone

from kernel.errors import Conflict
from timeline.errors import SeqConflict
from timeline.items import MAX_ITEMS_PER_APPEND, known_item_bytes, validate_new_items
from timeline.models import TimelineHead, TimelineRow
from timeline.search import timeline_search
from timeline.signals import live_notice, timeline_committed
from timeline.writes.append_sql import append_sql, row_params
from timeline.writes.group_commit import run_grouped_append
from timeline.writes.head import AgentHead, head_params, lock_agent, save_head
from timeline.writes.idempotency import check_replays_match, committed_by_item_id, refuse_committed_item_ids

#: Rows per INSERT batch of a bulk append: big enough to amortise the round
#: trip, small enough that memory stays flat however many rows stream in.
BULK_APPEND_BATCH = 5000


@dataclass(frozen=True)
class NewTimelineItem:
    item: dict
    item_id: str | None = None
    #: Paseo's row keys: the commit time (None: the append's), its turn and provider keys,
    #: and its revert token as JSON text (None: the row has none; ``"null"``: a null one).
    committed_at: dt.datetime | None = None
    turn_id: str | None = None
    provider_message_id: str | None = None
    provider_timeline_item_id: str | None = None
    revert_token_json: str | None = None


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
    #: The item's ``timeline.items.item_json``, when the caller has it (encoded once per append).
    item_json: str | None = None
    turn_id: str | None = None
    provider_message_id: str | None = None
    provider_timeline_item_id: str | None = None
    revert_token_json: str | None = None


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
    #: the seq after the head the call found (head_seq + 1 when nothing was appended)
    first_seq: int
    head_seq: int
    epoch: str
    #: the rows inserted (fewer than head_seq - first_seq + 1 when ``keep_seqs`` left holes)
    created: int


def append_timeline_items(
    *, agent_id: str, items: Sequence[NewTimelineItem], expected_head_seq: int | None = None
) -> AppendResult:
    """Commit ``items`` to the agent's timeline as seq head+1, head+2, ... atomically.

    Seq assignment is serialised per agent: the agent's timeline head is locked
    (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the IMMEDIATE
    transaction already holds the write lock), the head is read, rows are
    bulk-inserted and the head moves, all in one transaction. The unique
    (agent, seq) constraint is only the backstop.

    An item whose ``item_id`` is already committed with the same ``item`` is
    not stored again; its original seq is returned, so a client retrying after
    a timeout never creates a duplicate. When every item was already committed
    the call succeeds whatever ``expected_head_seq`` says, for the same reason.
    The same ``item_id`` with a different ``item`` is not a retry but a client
    reusing a key: ``ItemConflict`` (409 ``item_conflict``) with the stored
    row's seq, and nothing of the call is stored. Items are compared as JSON
    (``timeline.items.same_item``), so key order and the database's storage
    form do not matter.

    Concurrent appends of the process commit together (``timeline.writes.group_commit``):
    each in a savepoint of one shared transaction, so each stays atomic on its
    own and gets its own answer, only once that transaction has committed.
    Called inside an atomic block, the append runs in the caller's transaction.
    """
    encoded = validate_new_items(items)
    append = partial(
        _append_checked_items, agent_id=agent_id, items=items, encoded=encoded, expected_head_seq=expected_head_seq
    )
    return run_grouped_append(append, agent_id=agent_id, items=len(items))


def _append_checked_items(
    *, agent_id: str, items: Sequence[NewTimelineItem], encoded: list[str | None], expected_head_seq: int | None
) -> AppendResult:
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=False)
        committed = committed_by_item_id(agent.agent_id, items, connection=agent.connection)
        check_replays_match(items, committed)
        new_items = [(new, text) for new, text in zip(items, encoded, strict=True) if new.item_id not in committed]
        if new_items:
            _check_expected_head(agent, expected_head_seq)
        now = timezone.now()
        first_seq = agent.head_seq + 1
        pending = [_pending_row(new, text, now) for new, text in new_items]
        agent.alive_at = now
        _append_locked(agent, pending, batch_size=MAX_ITEMS_PER_APPEND)
    return AppendResult(
        rows=_rows_in_call_order(items, committed, first_seq=first_seq, committed_at=now),
        head_seq=agent.head_seq,
        epoch=agent.timeline_epoch,
        created=len(new_items),
        replayed=len(items) - len(new_items),
    )


def _pending_row(new: NewTimelineItem, text: str | None, now: dt.datetime) -> PendingRow:
    return PendingRow(
        item=new.item,
        item_type=new.item["type"],
        item_id=new.item_id,
        committed_at=new.committed_at or now,
        item_json=text,
        turn_id=new.turn_id,
        provider_message_id=new.provider_message_id,
        provider_timeline_item_id=new.provider_timeline_item_id,
        revert_token_json=new.revert_token_json,
    )


def bulk_append_timeline_rows(
    *,
    agent_id: str,
    rows: Iterable[CheckedRow],
    expected_head_seq: int | None = None,
    allow_archived: bool = False,
    batch_size: int = BULK_APPEND_BATCH,
    on_batch: Callable[[int], None] | None = None,
    start_seq: int | None = None,
    epoch: str | None = None,
    keep_seqs: bool = False,
    alive_at: dt.datetime | None = None,
) -> BulkAppendResult:
    """Append already-checked ``rows`` (any iterable, consumed in batches of
    ``batch_size``) to the agent's timeline as seq head+1, head+2, ...

    The same rules as ``append_timeline_items``: the agent's head is locked, seq
    stays contiguous, ``head_seq`` moves, and ``timeline_committed`` is sent
    once, after the outermost transaction commits (never on a rollback).
    Called inside the caller's transaction it runs in a savepoint, so the
    caller's all-or-nothing holds. Rows are placed by position, so there is
    no idempotent replay here: an ``item_id`` the agent has already committed
    (before this call or in an earlier batch of it) raises ``ItemConflict``
    with that row's seq, whatever its content, and nothing of the call is
    stored. Repeats inside one batch are the caller's to prevent (the unique
    constraint raises ``IntegrityError``).

    ``allow_archived`` lets the legacy importer carry history into agents the
    legacy data marks archived; the API append refuses them.
    ``on_batch(count)`` is called after each batch is inserted.
    ``start_seq`` and ``epoch`` carry a history over as it was (a Paseo
    history whose older rows were pruned keeps its seqs and its epoch, so its
    clients' cursors stay valid): only into a timeline that retains nothing,
    whose retained range then starts at ``start_seq``.

    ``keep_seqs``: each row goes in at its own ``seq`` (ascending, above the
    head) instead of head+1: an imported history with holes in its seqs keeps
    them, and ``committed_rows`` then says how many rows the range holds.
    ``alive_at``: the agent's own daemon wrote the rows (``timeline.writes.history``'s row writes), a
    sign of life as an append is.
    """
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=allow_archived)
        agent.alive_at = alive_at
        _check_expected_head(agent, expected_head_seq)
        restarted = start_seq is not None or epoch is not None
        if restarted:
            _restart_history(agent, start_seq=start_seq, epoch=epoch)
        first_seq = agent.head_seq + 1
        added_before = agent.added_rows
        _append_locked(agent, rows, batch_size=batch_size, on_batch=on_batch, check_item_ids=True, keep_seqs=keep_seqs)
        if restarted and agent.head_seq == first_seq - 1:
            # A history that retains no row still goes on at start_seq, in its epoch.
            save_head(agent)
    return BulkAppendResult(
        first_seq=first_seq,
        head_seq=agent.head_seq,
        epoch=agent.timeline_epoch,
        created=agent.added_rows - added_before,
    )


# --- the heads ----------------------------------------------------------------


def create_timeline_heads(*, agent_ids: Sequence[str]) -> None:
    """Give each new agent its empty timeline head, in the transaction that creates the
    agents (``snapshots.signals.agents_created``'s receiver, ``timeline.apps``)."""
    TimelineHead.objects.bulk_create([TimelineHead(agent_id=agent_id) for agent_id in agent_ids], batch_size=500)


@dataclass(frozen=True)
class CarriedHead:
    """What an import carries over into an agent's head besides its rows: the activity
    times its source recorded, and for an agent it creates, its source's epoch."""

    agent_id: str
    last_activity_at: dt.datetime | None
    last_user_message_at: dt.datetime | None
    epoch: str | None = None


def carry_over_heads(heads: Sequence[CarriedHead]) -> None:
    """Set the carried-over activity times (and epochs) of ``heads``, inside the caller's
    transaction. An epoch is only taken by a timeline that has never held a row, so a
    history is never renamed under its clients' cursors."""
    if not heads:
        return
    by_id = {head.agent_id: head for head in heads}
    stored = list(TimelineHead.objects.select_for_update().filter(pk__in=list(by_id)).order_by("pk"))
    for head in stored:
        carried = by_id[head.agent_id]
        head.last_activity_at = carried.last_activity_at
        head.last_user_message_at = carried.last_user_message_at
        if carried.epoch is not None and head.head_seq == 0:
            head.epoch = carried.epoch
    fields = ["last_activity_at", "last_user_message_at", "epoch"]
    TimelineHead.objects.bulk_update(stored, fields, batch_size=500)


def rotate_epochs_sql(quote_name: Callable[[str], str], *, new_epoch: str) -> str:
    """The statement giving every timeline a new epoch, ``new_epoch`` being the SQL that makes
    one: what a data-snapshot restore runs on the restored rows (``datadir``), in the
    restore's own transaction, before any client reads them."""
    head = TimelineHead._meta
    return f"UPDATE {quote_name(head.db_table)} SET {quote_name(head.get_field('epoch').column)} = {new_epoch}"


# --- the core ---------------------------------------------------------------


def _restart_history(agent: AgentHead, *, start_seq: int | None, epoch: str | None) -> None:
    """Let the next rows start a history carried over as it was: at
    ``start_seq``, in ``epoch``. Only a timeline retaining nothing can."""
    if agent.min_seq <= agent.head_seq:
        raise Conflict(
            f"Agent {agent.agent_id} already holds rows {agent.min_seq}..{agent.head_seq}; "
            "a history can only be carried over into an empty timeline."
        )
    if start_seq is not None:
        if start_seq < 1:
            raise ValidationError({"start_seq": ["start_seq is 1 or more."]}, code="invalid")
        if start_seq <= agent.head_seq and (epoch is None or epoch == agent.timeline_epoch):
            raise Conflict(
                f"Seqs up to {agent.head_seq} were already used in epoch {agent.timeline_epoch!r}; "
                "an earlier start_seq needs a new epoch."
            )
        agent.head_seq = start_seq - 1
        agent.min_seq = start_seq
    if epoch is not None:
        agent.timeline_epoch = epoch


def _check_expected_head(agent: AgentHead, expected_head_seq: int | None) -> None:
    if expected_head_seq is not None and expected_head_seq != agent.head_seq:
        raise SeqConflict(
            f"Expected head_seq {expected_head_seq}, but agent {agent.agent_id} is at {agent.head_seq}.",
            extra={"head_seq": agent.head_seq},
        )


def _append_locked(
    agent: AgentHead,
    rows: Iterable[CheckedRow],
    *,
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
    check_item_ids: bool = False,
    keep_seqs: bool = False,
) -> None:
    """Insert ``rows`` after the head of ``agent``, which the caller has
    locked in the current transaction, then move the head and announce it.

    ``check_item_ids``: refuse a batch carrying an item id already committed
    (one indexed lookup per batch; the API append has looked them up already)."""
    if on_batch is None and not check_item_ids and _append_in_one_statement(agent, rows, batch_size=batch_size):
        return
    start_head = agent.head_seq
    for batch in _batches(rows, batch_size, keep_seqs=keep_seqs):
        if check_item_ids:
            refuse_committed_item_ids(agent.agent_id, batch)
        if keep_seqs:
            _skip_to(agent, batch[0].seq)
        first_seq = agent.head_seq + 1
        _insert_batch(agent_id=agent.agent_id, first_seq=first_seq, rows=batch)
        batch_bytes = _count_batch(agent, batch)
        timeline_search(agent.connection).index_rows(rows=len(batch), item_bytes=batch_bytes)
        if on_batch is not None:
            on_batch(len(batch))
    if agent.head_seq == start_head:
        return
    save_head(agent)
    announce(agent_id=agent.agent_id, head_seq=agent.head_seq, epoch=agent.timeline_epoch)


def _append_in_one_statement(agent: AgentHead, rows: Iterable[CheckedRow], *, batch_size: int) -> bool:
    """Insert ``rows`` and write the head back in one statement, where the engine
    has one (``AppendSQL.insert_rows_and_save_head``) and ``rows`` is one batch;
    False, having done nothing, otherwise."""
    if not isinstance(rows, Sequence) or not 1 <= len(rows) <= batch_size:
        return False
    db = agent.connection
    statements = append_sql(db)
    if not statements.inserts_rows_and_saves_head:
        return False
    first_seq = agent.head_seq + 1
    batch_bytes = _count_batch(agent, rows)
    notice = live_notice()
    notify = notice and notice.arguments(agent_id=agent.agent_id, head_seq=agent.head_seq, epoch=agent.timeline_epoch)
    alive = agent.alive_at is not None
    statement = statements.insert_rows_and_save_head(len(rows), alive=alive, notify=notify is not None)
    values = row_params(db, agent_id=agent.agent_id, first_seq=first_seq, rows=rows, adapt_datetime=agent.adapt)
    params = [value for row in values for value in row] + head_params(agent)
    statement.execute(params + list(notify) if notify else params, connection=db)
    timeline_search(agent.connection).index_rows(rows=len(rows), item_bytes=batch_bytes)
    announce(agent_id=agent.agent_id, head_seq=agent.head_seq, epoch=agent.timeline_epoch, notified=notify is not None)
    return True


def _count_batch(agent: AgentHead, batch: Sequence[CheckedRow]) -> int:
    """Move ``agent``'s head, activity times and growth counters past ``batch`` (just inserted); its bytes."""
    agent.head_seq += len(batch)
    for row in batch:
        agent.saw(row)
    agent.added_rows += len(batch)
    batch_bytes = sum(known_item_bytes(row.item, getattr(row, "item_json", None)) for row in batch)
    agent.added_bytes += batch_bytes
    return batch_bytes


def announce(*, agent_id: str, head_seq: int, epoch: str, notified: bool = False) -> None:
    """Tell the live stream the head is now ``head_seq`` in ``epoch``: inside the transaction (the hub's
    notice) and once it has committed (``timeline_committed``). A reader whose cursor is now in another
    epoch or beyond the head gets ``reset``.

    ``notified``: the live hub's notice already went with the rows' statement."""
    notice = live_notice()
    if notice is not None and not notified:
        notice.send(agent_id=agent_id, head_seq=head_seq, epoch=epoch)
    transaction.on_commit(
        lambda: timeline_committed.send(sender=TimelineRow, agent_id=agent_id, head_seq=head_seq, epoch=epoch)
    )


def _batches(rows: Iterable[CheckedRow], size: int, *, keep_seqs: bool = False) -> Iterator[list[CheckedRow]]:
    """``rows`` in batches of ``size``; with ``keep_seqs`` each batch is also cut where
    the rows' own seqs jump, so every batch is contiguous."""
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        if not keep_seqs:
            yield batch
            continue
        start = 0
        for end in range(1, len(batch) + 1):
            if end == len(batch) or batch[end].seq != batch[end - 1].seq + 1:
                yield batch[start:end]
                start = end


def _skip_to(agent: AgentHead, seq: int) -> None:
    """Let the next row go in at its own ``seq``, leaving a hole after the head if it is further on."""
    if seq <= agent.head_seq:
        raise Conflict(f"Row seq {seq} is not above agent {agent.agent_id}'s head {agent.head_seq}.")
    agent.head_seq = seq - 1


def _insert_batch(*, agent_id: str, first_seq: int, rows: Sequence[CheckedRow]) -> None:
    """Insert ``rows`` as seq first_seq, first_seq+1, ... with one prepared INSERT.

    ``bulk_create`` compiles multi-row INSERTs field by field (on SQLite at
    most 166 rows of 6 parameters each, so 6,000 statements for 1M rows); one
    prepared INSERT run by ``executemany`` made the whole legacy import about
    25% faster (docs/benchmarks.md). A single row is sent with ``execute``:
    psycopg runs ``executemany`` in pipeline mode, which costs more for one row.
    Values are adapted by the same field and backend methods the ORM uses, so
    the stored values are the same.
    """
    db = connections[DEFAULT_DB_ALIAS]
    params = row_params(db, agent_id=agent_id, first_seq=first_seq, rows=rows)
    insert = append_sql(db).insert_row
    if len(params) == 1:
        insert.execute(params[0], connection=db)
    else:
        insert.executemany(params, connection=db)


# --- the API append's answer ------------------------------------------------


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
            rows.append(CommittedRow(seq=next_seq, committed_at=new.committed_at or committed_at, item_id=new.item_id))
            next_seq += 1
    return rows
