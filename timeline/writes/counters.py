"""The timelines' growth counters (``TimelineHead.committed_rows``, ``committed_bytes``): checking them
against the rows.

The append, import, trim and purge services keep the counters in the same
transaction as the rows, so they only drift if someone writes around the
services (a hand-edited database, a restore of a dump from before the
counters existed). ``check_counters`` finds and repairs that.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from timeline.items import item_bytes
from timeline.models import TimelineHead, TimelineRow


@dataclass(frozen=True)
class CounterDrift:
    agent_id: str
    stored: tuple[int, int]
    actual: tuple[int, int]


def _actual(agent_id: str) -> tuple[int, int]:
    rows = size = 0
    for item in TimelineRow.objects.filter(agent_id=agent_id).values_list("item", flat=True).iterator(2000):
        rows += 1
        size += item_bytes(item)
    return rows, size


def check_counters(*, repair: bool) -> list[CounterDrift]:
    """Every agent whose counters differ from its rows; with ``repair``, set them right.

    One short transaction per agent, holding its timeline head's lock while its
    rows are counted, so a concurrent append to it waits instead of being
    counted twice or not at all; other agents are not held up.
    """
    drifts = []
    for agent_id in TimelineHead.objects.order_by("agent_id").values_list("agent_id", flat=True).iterator(500):
        with transaction.atomic():
            stored = (
                TimelineHead.objects.select_for_update()
                .filter(pk=agent_id)
                .values_list("committed_rows", "committed_bytes")
                .first()
            )
            if stored is None:  # deleted meanwhile
                continue
            actual = _actual(agent_id)
            if stored == actual:
                continue
            drifts.append(CounterDrift(agent_id=agent_id, stored=stored, actual=actual))
            if repair:
                TimelineHead.objects.filter(pk=agent_id).update(committed_rows=actual[0], committed_bytes=actual[1])
    return drifts
