"""The retained range min_seq..head_seq: the database rule, the carry-over
append, and Paseo's read contract (window, stale_cursor, gap)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from kernel.errors import Conflict
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory
from tests.timeline.histories import T0, carry_over_history
from timeline.models import TimelineHead, TimelineRow
from timeline.selectors import RetainedRange, read_timeline
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db


def seqs(page):
    return [row["seq"] for row in page.rows]


@pytest.fixture
def pruned():
    """An agent whose history kept seqs 11..20 (1..10 pruned), in epoch paseo-epoch."""
    agent = AgentFactory()
    carry_over_history(agent.pk, start_seq=11, count=10)
    return agent


def test_carry_over_keeps_seqs_epoch_and_sets_min_seq(pruned):
    agent = AgentSnapshot.objects.get(pk=pruned.pk)
    assert (agent.timeline_head.min_seq, agent.timeline_head.head_seq, agent.timeline_head.epoch) == (
        11,
        20,
        "paseo-epoch",
    )
    assert list(TimelineRow.objects.filter(agent=agent).values_list("seq", flat=True)) == list(range(11, 21))
    # Later appends continue the same history.
    result = append_timeline_items(
        agent_id=agent.pk, items=[NewTimelineItem(item={"type": "user_message", "text": "hi"})]
    )
    assert (result.rows[0].seq, result.epoch) == (21, "paseo-epoch")


def test_carry_over_only_into_an_empty_timeline(pruned):
    with pytest.raises(Conflict):
        carry_over_history(pruned.pk, start_seq=30, count=1)
    assert TimelineHead.objects.get(pk=pruned.pk).head_seq == 20


def test_the_database_refuses_a_min_seq_above_head_plus_one():
    agent = AgentFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        TimelineHead.objects.filter(pk=agent.pk).update(min_seq=2)
    TimelineHead.objects.filter(pk=agent.pk).update(min_seq=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        TimelineHead.objects.filter(pk=agent.pk).update(min_seq=0)


def test_window_describes_the_timeline_not_the_page(pruned):
    page = read_timeline(agent_id=pruned.pk, direction="after", seq=12, limit=2)
    assert seqs(page) == [13, 14]
    assert page.retained.window() == {"min_seq": 11, "max_seq": 20, "next_seq": 21}
    assert (page.has_older, page.has_newer, page.reset, page.stale_cursor, page.gap) == (
        True,
        True,
        False,
        False,
        False,
    )


@pytest.mark.parametrize(
    "direction,seq,expected,has_older,has_newer",
    [
        ("tail", None, [16, 17, 18, 19, 20], True, False),
        ("before", 12, [11], False, True),
        ("before", 11, [], False, True),
        ("before", 5, [], False, True),
        ("after", 10, [11, 12, 13, 14, 15], False, True),
        ("after", 20, [], True, False),
    ],
)
def test_page_neighbours_are_relative_to_the_retained_rows(pruned, direction, seq, expected, has_older, has_newer):
    page = read_timeline(agent_id=pruned.pk, direction=direction, seq=seq, limit=5)
    assert seqs(page) == expected
    assert (page.has_older, page.has_newer, page.gap) == (has_older, has_newer, False)


@pytest.mark.parametrize("after", [0, 3, 9])
def test_an_after_cursor_below_min_seq_minus_one_is_a_gap(pruned, after):
    page = read_timeline(agent_id=pruned.pk, direction="after", seq=after, limit=3, epoch="paseo-epoch")
    assert (page.gap, page.reset, page.stale_cursor) == (True, True, False)
    # Paseo's bounded reset window: a fresh tail, as for a stale epoch.
    assert page.direction == "tail" and seqs(page) == [18, 19, 20] and page.has_older and not page.has_newer


def test_a_stale_epoch_is_a_stale_cursor_not_a_gap(pruned):
    page = read_timeline(agent_id=pruned.pk, direction="after", seq=3, limit=3, epoch="other")
    assert (page.stale_cursor, page.reset, page.gap, page.direction) == (True, True, False, "tail")
    assert seqs(page) == [18, 19, 20]


def test_retained_range_rules():
    empty = RetainedRange(min_seq=11, head_seq=10)
    assert empty.is_empty and empty.window() == {"min_seq": 0, "max_seq": 10, "next_seq": 11}
    full = RetainedRange(min_seq=11, head_seq=20)
    assert [full.gap_after(seq) for seq in (9, 10, 11, 25)] == [True, False, False, False]


def test_carry_over_sets_activity_from_the_rows(pruned):
    agent = AgentSnapshot.objects.get(pk=pruned.pk)
    assert agent.timeline_head.last_activity_at == agent.timeline_head.last_user_message_at == T0.replace(second=20)
