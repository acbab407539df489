"""Fixtures the timeline's tests share."""

from __future__ import annotations

import pytest

from timeline.signals import timeline_committed


@pytest.fixture
def committed():
    """Each ``timeline_committed`` signal sent during the test, as (head_seq, epoch)."""
    sent = []

    def receiver(sender, **kwargs):
        sent.append((kwargs["head_seq"], kwargs["epoch"]))

    timeline_committed.connect(receiver)
    yield sent
    timeline_committed.disconnect(receiver)
