from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernel.errors import NotFound
from snapshots.services import archive_agent
from tests.factories import AgentFactory
from timeline.models import TimelineHead
from timeline.selectors import read_timeline
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_with_10_rows():
    agent = AgentFactory()
    append_timeline_items(
        agent_id=agent.pk,
        items=[NewTimelineItem(item={"type": "user_message", "text": str(i)}) for i in range(1, 11)],
    )
    return agent


def page_seqs(page):
    return [row["seq"] for row in page.rows]


def test_tail_returns_the_last_rows_ascending(agent_with_10_rows):
    page = read_timeline(agent_id=agent_with_10_rows.pk, limit=3)
    assert page_seqs(page) == [8, 9, 10]
    assert page.retained.window() == {"min_seq": 1, "max_seq": 10, "next_seq": 11}
    assert (page.has_older, page.has_newer, page.reset) == (True, False, False)


def test_before_and_after_windows(agent_with_10_rows):
    before = read_timeline(agent_id=agent_with_10_rows.pk, direction="before", seq=5, limit=3)
    assert page_seqs(before) == [2, 3, 4] and before.has_older and before.has_newer
    after = read_timeline(agent_id=agent_with_10_rows.pk, direction="after", seq=5, limit=3)
    assert page_seqs(after) == [6, 7, 8] and after.has_older and after.has_newer


@pytest.mark.parametrize(
    "direction,seq,expected,has_older,has_newer",
    [
        ("before", 0, [], False, True),
        ("before", 1, [], False, True),
        ("before", 2, [1], False, True),
        ("before", 999, [6, 7, 8, 9, 10], True, False),
        ("after", 0, [1, 2, 3, 4, 5], False, True),
        ("after", 10, [], True, False),
        ("after", 999, [], True, False),
    ],
)
def test_edges(agent_with_10_rows, direction, seq, expected, has_older, has_newer):
    page = read_timeline(agent_id=agent_with_10_rows.pk, direction=direction, seq=seq, limit=5)
    assert page_seqs(page) == expected
    assert (page.has_older, page.has_newer) == (has_older, has_newer)


def test_empty_timeline():
    agent = AgentFactory()
    for direction, seq in (("tail", None), ("before", 5), ("after", 0)):
        page = read_timeline(agent_id=agent.pk, direction=direction, seq=seq)
        assert page.rows == [] and page.retained.window() == {"min_seq": 0, "max_seq": 0, "next_seq": 1}
        assert not page.has_older and not page.has_newer


def test_stale_epoch_gets_reset_and_a_tail(agent_with_10_rows):
    old_epoch = agent_with_10_rows.timeline_head.epoch
    TimelineHead.objects.filter(pk=agent_with_10_rows.pk).update(epoch="replaced")
    page = read_timeline(agent_id=agent_with_10_rows.pk, direction="after", seq=2, limit=4, epoch=old_epoch)
    assert page.reset and page.direction == "tail" and page_seqs(page) == [7, 8, 9, 10]
    assert page.epoch == "replaced"
    same = read_timeline(agent_id=agent_with_10_rows.pk, direction="after", seq=2, limit=4, epoch="replaced")
    assert not same.reset and page_seqs(same) == [3, 4, 5, 6]


def test_archived_agent_stays_readable(agent_with_10_rows):
    archive_agent(agent=agent_with_10_rows)
    assert len(read_timeline(agent_id=agent_with_10_rows.pk).rows) == 10


def test_bad_arguments_and_unknown_agent(agent_with_10_rows):
    for kwargs in (
        {"direction": "sideways"},
        {"limit": -1},
        {"limit": 1001},
        {"direction": "after", "seq": -1},
        {"projection": "fancy"},
    ):
        with pytest.raises(ValidationError):
            read_timeline(agent_id=agent_with_10_rows.pk, **kwargs)
    with pytest.raises(NotFound):
        read_timeline(agent_id="ghost")


def test_a_read_is_two_queries_whatever_the_history(agent_with_10_rows):
    with CaptureQueriesContext(connection) as queries:
        read_timeline(agent_id=agent_with_10_rows.pk, direction="before", seq=8, limit=5)
    assert len(queries) == 2


def test_projected_view_merges_runs_of_assistant_and_reasoning_rows():
    agent = AgentFactory()
    kinds = [
        "user_message",
        "reasoning",
        "reasoning",
        "assistant_message",
        "assistant_message",
        "assistant_message",
        "user_message",
        "assistant_message",
    ]
    append_timeline_items(
        agent_id=agent.pk,
        items=[NewTimelineItem(item={"type": k, "text": f"{i}."}, item_id=f"i{i}") for i, k in enumerate(kinds, 1)],
    )
    page = read_timeline(agent_id=agent.pk, projection="projected")
    summary = [(e["item_type"], e["seq_start"], e["seq_end"], e["item"]["text"]) for e in page.rows]
    assert summary == [
        ("user_message", 1, 1, "1."),
        ("reasoning", 2, 3, "2.3."),
        ("assistant_message", 4, 6, "4.5.6."),
        ("user_message", 7, 7, "7."),
        ("assistant_message", 8, 8, "8."),
    ]
    assert page.rows[2]["item_ids"] == ["i4", "i5", "i6"]
    canonical = read_timeline(agent_id=agent.pk)
    assert [r["seq"] for r in canonical.rows] == list(range(1, 9))
