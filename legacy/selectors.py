"""The reads of an import: rows looked up in batches, locked until the import commits."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models

from timeline.models import TimelineRow

#: Records per bulk UPDATE / IN (...) lookup; well under SQLite's variable limit.
RECORD_BATCH = 500


def chunks(items: list, size: int = RECORD_BATCH) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def locked_rows(model: type[models.Model], key: str, values: Iterable) -> list:
    """Rows whose ``key`` is in ``values``, locked until the import commits
    (PostgreSQL; on SQLite the IMMEDIATE transaction already holds the write lock)."""
    values = sorted(set(values))
    rows = []
    for chunk in chunks(values):
        rows += list(model.objects.select_for_update().filter(**{f"{key}__in": chunk}))
    return rows


def stored_timeline_row(*, agent_id: str, seq: int) -> dict[str, Any] | None:
    """The committed row ``seq`` of the agent, as the fields a file row is compared on."""
    return TimelineRow.objects.filter(agent_id=agent_id, seq=seq).values("committed_at", "item_id", "item").first()
