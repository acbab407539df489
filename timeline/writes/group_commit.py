"""Group commit for the API append (``kernel/group_commit.py``): which appends share a transaction.

On SQLite one write lock covers the whole database, so every append of the
process may join one batch (one lane). Where the database locks rows
(PostgreSQL), a batch only gathers appends to one agent: a transaction holding
several agents' row locks could deadlock with another process taking them in
another order, and appends to different agents already run side by side there.
``CHARTR_GROUP_COMMIT=0`` turns it off: every append its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TypeVar

from django.conf import settings
from django.db import connection

from kernel.group_commit import GroupCommit

T = TypeVar("T")

#: A batch stays short: at most this many appends, and this many items in all
#: (one call may carry 500), the first call always taken.
MAX_APPENDS_PER_BATCH = 64
MAX_ITEMS_PER_BATCH = 2000

appends = GroupCommit(max_requests=MAX_APPENDS_PER_BATCH, max_weight=MAX_ITEMS_PER_BATCH)


def append_lane(agent_id: str) -> str | None:
    """The lane of an append to ``agent_id``: the agent where rows are locked, else the one database lane."""
    return agent_id if _database_locks_rows() else None


@cache
def _database_locks_rows() -> bool:
    # The default database's engine is the process's for its whole life; asking its
    # connection (a thread-local lookup) on every append cost more than the answer.
    return connection.features.has_select_for_update


def run_grouped_append(work: Callable[[], T], *, agent_id: str, items: int) -> T:
    """``work()`` (an append of ``items`` items to ``agent_id``), committed with concurrent appends."""
    if not settings.CHARTR_GROUP_COMMIT:
        return work()
    # The append does all its writes in one atomic block of its own: in a batch, that is its savepoint.
    return appends.run(work, lane=append_lane(agent_id), weight=items, savepoint=False)
