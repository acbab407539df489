from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connections

from kernel.errors import ArchivedConflict, NotFound, PayloadTooLarge, SeqConflict
from snapshots.services import archive_agent
from tests.factories import AgentFactory
from timeline.models import TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db


def msg(text="hi", item_id=None, kind="user_message"):
    return NewTimelineItem(item={"type": kind, "text": text}, item_id=item_id)


def seqs(agent):
    return list(TimelineRow.objects.filter(agent=agent).order_by("seq").values_list("seq", flat=True))


class TestAppend:
    def test_assigns_contiguous_seqs_and_moves_the_head(self):
        agent = AgentFactory()
        first = append_timeline_items(agent_id=agent.pk, items=[msg("a"), msg("b")])
        second = append_timeline_items(agent_id=agent.pk, items=[msg("c")])
        assert [r.seq for r in first.rows] == [1, 2] and first.head_seq == 2 and first.created == 2
        assert [r.seq for r in second.rows] == [3] and second.head_seq == 3
        agent.refresh_from_db()
        assert agent.head_seq == 3 and seqs(agent) == [1, 2, 3]
        assert first.epoch == agent.timeline_epoch
        row = TimelineRow.objects.get(agent=agent, seq=1)
        assert row.item_type == "user_message" and row.item == {"type": "user_message", "text": "a"}

    def test_idempotent_retry_returns_the_original_seqs(self):
        agent = AgentFactory()
        first = append_timeline_items(agent_id=agent.pk, items=[msg("a", "k1"), msg("b", "k2")])
        append_timeline_items(agent_id=agent.pk, items=[msg("c")])
        retry = append_timeline_items(agent_id=agent.pk, items=[msg("a", "k1"), msg("b", "k2")], expected_head_seq=0)
        assert retry.created == 0 and retry.replayed == 2
        assert [(r.seq, r.item_id) for r in retry.rows] == [(1, "k1"), (2, "k2")]
        assert [r.committed_at for r in retry.rows] == [r.committed_at for r in first.rows]
        assert seqs(agent) == [1, 2, 3]

    def test_partly_new_batch_stores_only_the_new_items(self):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[msg("a", "k1")])
        result = append_timeline_items(agent_id=agent.pk, items=[msg("a", "k1"), msg("b", "k2"), msg("c")])
        assert [r.seq for r in result.rows] == [1, 2, 3] and result.created == 2

    def test_expected_head_conflict_carries_the_current_head(self):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[msg("a")], expected_head_seq=0)
        with pytest.raises(SeqConflict) as exc:
            append_timeline_items(agent_id=agent.pk, items=[msg("b")], expected_head_seq=0)
        assert exc.value.code == "seq_conflict" and exc.value.extra == {"head_seq": 1}
        assert seqs(agent) == [1]

    def test_a_batch_with_one_bad_item_stores_nothing(self):
        agent = AgentFactory()
        bad = NewTimelineItem(item={"type": "tool_call", "callId": "c1", "name": "sh", "status": "exploded"})
        with pytest.raises(ValidationError) as exc:
            append_timeline_items(agent_id=agent.pk, items=[msg("a"), msg("b"), bad])
        assert "items[2].item" in exc.value.message_dict
        assert seqs(agent) == []
        agent.refresh_from_db()
        assert agent.head_seq == 0

    @pytest.mark.parametrize(
        "item",
        [
            "not an object",
            {"text": "no type"},
            {"type": 7},
            {"type": "user_message"},
            {"type": "assistant_message", "text": 3},
            {"type": "tool_call", "callId": "c", "name": "n"},
            {"type": "todo", "items": "x"},
            {"type": "interaction"},
            {"type": "error"},
            {"type": "compaction"},
            {"type": "user_message", "text": "nul\x00byte"},
        ],
    )
    def test_item_shapes_are_checked(self, item):
        with pytest.raises(ValidationError):
            append_timeline_items(agent_id=AgentFactory().pk, items=[NewTimelineItem(item=item)])

    def test_unknown_types_are_accepted_for_forward_compatibility(self):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item={"type": "hologram", "x": [1]})])
        assert TimelineRow.objects.get(agent=agent).item_type == "hologram"

    def test_batch_size_and_duplicate_ids_are_checked(self):
        agent = AgentFactory()
        with pytest.raises(ValidationError):
            append_timeline_items(agent_id=agent.pk, items=[])
        with pytest.raises(ValidationError):
            append_timeline_items(agent_id=agent.pk, items=[msg()] * 501)
        with pytest.raises(ValidationError):
            append_timeline_items(agent_id=agent.pk, items=[msg("a", "k"), msg("b", "k")])
        assert seqs(agent) == []

    def test_oversized_item_is_refused(self, settings):
        settings.CHARTR_MAX_ITEM_BYTES = 100
        agent = AgentFactory()
        with pytest.raises(PayloadTooLarge):
            append_timeline_items(agent_id=agent.pk, items=[msg("x" * 200)])
        assert seqs(agent) == []

    def test_archived_and_unknown_agents_are_refused(self):
        agent = AgentFactory()
        archive_agent(agent=agent)
        with pytest.raises(ArchivedConflict):
            append_timeline_items(agent_id=agent.pk, items=[msg()])
        with pytest.raises(NotFound):
            append_timeline_items(agent_id="nobody", items=[msg()])

    def test_signal_fires_on_commit(self, django_capture_on_commit_callbacks):
        from timeline.signals import timeline_committed

        seen = []
        timeline_committed.connect(
            lambda **kw: seen.append((kw["agent_id"], kw["head_seq"])), weak=False, dispatch_uid="t"
        )
        try:
            agent = AgentFactory()
            with django_capture_on_commit_callbacks(execute=True):
                append_timeline_items(agent_id=agent.pk, items=[msg(), msg()])
        finally:
            timeline_committed.disconnect(dispatch_uid="t")
        assert seen == [(agent.pk, 2)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_appenders_get_exactly_one_to_n():
    """8 threads x 300 single-item appends to one agent commit seqs 1..2400, no gap, no duplicate."""
    agent = AgentFactory()
    threads, appends = 8, 300
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def appender(worker: int) -> None:
        try:
            start.wait()
            for i in range(appends):
                append_timeline_items(agent_id=agent.pk, items=[msg(f"{worker}-{i}", item_id=f"{worker}-{i}")])
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=appender, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=240)
    assert not errors, errors[:3]
    total = threads * appends
    assert seqs(agent) == list(range(1, total + 1))
    agent.refresh_from_db()
    assert agent.head_seq == total
    assert TimelineRow.objects.filter(agent=agent).values("item_id").distinct().count() == total
