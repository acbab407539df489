"""The timeline head an append holds (``timeline.models.TimelineHead``): read under
its row's lock (``lock_agent``), moved in memory as rows go in (``AgentHead``), and
written back in the same transaction (``save_head``, or ``head_params`` for a statement that
writes the rows and the head together). Plain SQL built once per engine
(``timeline.writes.append_sql``); the rules of an append are in ``timeline.services``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Protocol

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.dateparse import parse_datetime

from kernel.errors import ArchivedConflict, NotFound
from timeline.writes.append_sql import append_sql


class RowActivity(Protocol):
    """What the head reads of a row going in (``timeline.services.CheckedRow`` has it)."""

    @property
    def item_type(self) -> str: ...
    @property
    def committed_at(self) -> dt.datetime: ...


@dataclass
class AgentHead:
    """The head of an agent's timeline, locked for an append."""

    agent_id: str
    head_seq: int
    min_seq: int
    timeline_epoch: str
    last_activity_at: dt.datetime | None
    last_user_message_at: dt.datetime | None
    #: The connection holding the lock (the default database's, resolved once per append).
    connection: BaseDatabaseWrapper
    #: What this append adds to the agent's growth counters.
    added_rows: int = 0
    added_bytes: int = 0
    #: When the agent's daemon itself appended (a sign of life); None for the importer.
    alive_at: dt.datetime | None = None
    #: Datetimes in the connection's form, by identity (``adapt``).
    _adapted: dict[int, tuple[object, object]] = field(default_factory=dict, repr=False)

    def adapt(self, value: dt.datetime | None) -> object:
        """``value`` as the connection stores it, made once per datetime object: an append
        writes its commit time up to three times (each row, ``last_activity_at``,
        ``last_appended_at``), and on SQLite each adaptation cost more than a statement's binding."""
        kept = self._adapted.get(id(value))
        if kept is not None and kept[0] is value:
            return kept[1]
        adapted = self.connection.ops.adapt_datetimefield_value(value)
        self._adapted[id(value)] = (value, adapted)
        return adapted

    def saw(self, row: RowActivity) -> None:
        """Move the activity times to a row's commit time (never back: an
        imported history may be older than what the agent already did)."""
        if self.last_activity_at is None or row.committed_at > self.last_activity_at:
            self.last_activity_at = row.committed_at
        if row.item_type == "user_message" and (
            self.last_user_message_at is None or row.committed_at > self.last_user_message_at
        ):
            self.last_user_message_at = row.committed_at


def lock_agent(agent_id: str, *, allow_archived: bool) -> AgentHead:
    """Read the agent's timeline head, and whether the agent is archived, under a lock
    held until the transaction ends.

    On PostgreSQL the head row ``FOR UPDATE`` and the agent row ``FOR KEY SHARE``
    (``timeline.writes.append_sql.PostgreSQLAppendSQL``): snapshot updates and heartbeats
    of the agent go on beside an append. SQLite has no row locks, and its
    IMMEDIATE transaction already holds the write lock. Plain SQL built once per engine (``timeline.writes.append_sql``), here and
    in ``save_head`` and ``_insert_batch``: querysets cost about 0.9 and 0.35
    ms of CPU per call against 0.06 ms each, and building the SQL text on every
    call about as much again as sending it (docs/benchmarks.md).
    """
    db = connections[DEFAULT_DB_ALIAS]
    found = append_sql(db).lock_agent.fetchone([agent_id], connection=db)
    if found is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    head_seq, min_seq, epoch, last_activity_at, last_user_message_at, archived_at = found
    if archived_at is not None and not allow_archived:
        raise ArchivedConflict(f"Agent {agent_id} is archived; its timeline is closed.")
    return AgentHead(
        agent_id=agent_id,
        head_seq=head_seq,
        min_seq=min_seq,
        timeline_epoch=epoch,
        last_activity_at=read_datetime(last_activity_at),
        last_user_message_at=read_datetime(last_user_message_at),
        connection=db,
    )


def read_datetime(value) -> dt.datetime | None:
    """A datetime column read by plain SQL: SQLite may hand back text or a
    naive datetime (stored in UTC), PostgreSQL an aware datetime."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value


def save_head(agent: AgentHead) -> None:
    """Write the retained range, epoch and activity times of ``agent`` back,
    and add what it appended to the growth counters (plain SQL for the reason
    in ``lock_agent``).

    An append by the agent's own daemon (``agent.alive_at``) is a sign of life
    too: ``last_appended_at`` moves with the head, and the agent's staleness
    reads it (``snapshots.selectors.last_sign_of_life``), so an appending agent
    is never stale. A history carried over by the importer is not.
    """
    statements = append_sql(agent.connection)
    statement = statements.save_head_alive if agent.alive_at else statements.save_head
    statement.execute(head_params(agent), connection=agent.connection)


def head_params(agent: AgentHead) -> list:
    """``save_head``'s parameters: the head columns, ``last_appended_at`` for a live agent, the counters,
    the agent."""
    adapt = agent.adapt
    params = [
        agent.head_seq,
        agent.min_seq,
        agent.timeline_epoch,
        adapt(agent.last_activity_at),
        adapt(agent.last_user_message_at),
    ]
    if agent.alive_at is not None:
        params.append(adapt(agent.alive_at))
    params += [agent.added_rows, agent.added_bytes, agent.agent_id]
    return params
