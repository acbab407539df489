"""A test-only fault: every 50th acknowledged append loses its last row right after it commits.

Installed only by ``tests.support.lossy_settings`` (a server started with
``DJANGO_SETTINGS_MODULE=tests.support.lossy_settings``), never by chartr's own
settings: no production switch turns it on. tests/process/test_history_check.py
serves the history workload through it to prove the checker reports the lost rows.
"""

from __future__ import annotations

import itertools

from django.apps import AppConfig

EVERY = 50

_appends = itertools.count(1)


def drop_every_fiftieth_row(sender, *, agent_id: str, head_seq: int, epoch: str, **kwargs) -> None:
    """A ``timeline_committed`` receiver: deletes the last row of every ``EVERY``-th committed append."""
    if next(_appends) % EVERY:
        return
    from timeline.models import TimelineRow

    TimelineRow.objects.filter(agent_id=agent_id, seq=head_seq).delete()


class LossyRowsConfig(AppConfig):
    name = "tests.support.lossy_rows"
    label = "lossy_rows"

    def ready(self) -> None:
        from timeline.signals import timeline_committed

        timeline_committed.connect(drop_every_fiftieth_row, dispatch_uid="lossy_rows")
