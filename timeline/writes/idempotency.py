"""Idempotent appends: what an ``item_id`` already committed means for a new append.

The API append replays an item whose ``item_id`` is committed (its stored
seq is the answer) when the content is the same, and refuses it with
``item_conflict`` when it is not; the bulk append (the importer) places rows
by position, so any committed ``item_id`` there is a conflict. Both read
under the agent's lock, inside the append's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from timeline.errors import ItemConflict
from timeline.items import same_item
from timeline.models import TimelineRow
from timeline.writes.append_sql import append_sql

#: Item ids per lookup: far below any SQLite build's limit on query parameters.
ID_CHUNK = 500


class WithItemId(Protocol):
    @property
    def item(self) -> dict: ...
    @property
    def item_id(self) -> str | None: ...


def committed_by_item_id(
    agent_id: str, items: Sequence[WithItemId], *, connection: BaseDatabaseWrapper | None = None
) -> dict[str, TimelineRow]:
    """The rows already committed under the item ids of this call (read under the agent's lock,
    on ``connection``: the default database's, which the caller may have looked up already)."""
    wanted_ids = [new.item_id for new in items if new.item_id is not None]
    if not wanted_ids:
        return {}
    # Nearly every call is a first attempt: one prepared lookup of the ids says
    # so, and only a retry builds the queryset that reads the stored rows.
    db = connection if connection is not None else connections[DEFAULT_DB_ALIAS]
    found = append_sql(db).committed_item_ids(len(wanted_ids)).fetchall([agent_id, *wanted_ids], connection=db)
    if not found:
        return {}
    stored = TimelineRow.objects.filter(agent_id=agent_id, item_id__in=[item_id for (item_id,) in found]).only(
        "seq", "committed_at", "item_id", "item"
    )
    return {row.item_id: row for row in stored}


def check_replays_match(items: Sequence[WithItemId], committed: dict[str, TimelineRow]) -> None:
    for index, new in enumerate(items):
        stored = committed.get(new.item_id) if new.item_id is not None else None
        if stored is not None and not same_item(stored.item, new.item):
            raise ItemConflict(
                f"items[{index}]: item_id {new.item_id!r} is already committed as seq {stored.seq} "
                "with different content; a retry must send the same item, new content needs a new item_id.",
                extra={"item_id": new.item_id, "seq": stored.seq},
            )


def refuse_committed_item_ids(agent_id: str, batch: Sequence[WithItemId]) -> None:
    """The bulk append's check: no row of ``batch`` may reuse an item id the agent has committed."""
    wanted_ids = [row.item_id for row in batch if row.item_id is not None]
    for start in range(0, len(wanted_ids), ID_CHUNK):
        chunk = wanted_ids[start : start + ID_CHUNK]
        stored = (
            TimelineRow.objects.filter(agent_id=agent_id, item_id__in=chunk)
            .order_by("seq")
            .values_list("item_id", "seq")
            .first()
        )
        if stored is None:
            continue
        item_id, seq = stored
        raise ItemConflict(
            f"item_id {item_id!r} is already committed as seq {seq} for agent {agent_id}.",
            extra={"item_id": item_id, "seq": seq},
        )
