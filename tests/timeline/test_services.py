from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, transaction

from kernel.errors import ArchivedConflict, NotFound, PayloadTooLarge
from snapshots.services import archive_agent
from tests.factories import AgentFactory
from timeline.errors import ItemConflict, SeqConflict
from timeline.models import TimelineRow
from timeline.services import (
    NewTimelineItem,
    PendingRow,
    append_timeline_items,
    bulk_append_timeline_rows,
)
from timeline.signals import timeline_committed

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
        assert agent.timeline_head.head_seq == 3 and seqs(agent) == [1, 2, 3]
        assert first.epoch == agent.timeline_head.epoch
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

    def test_a_reused_item_id_with_other_content_is_refused_with_the_stored_seq(self):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[msg("a", "k1"), msg("b", "k2")])
        with pytest.raises(ItemConflict) as exc:
            append_timeline_items(agent_id=agent.pk, items=[msg("c", "k3"), msg("B", "k2")])
        assert exc.value.code == "item_conflict" and exc.value.extra == {"item_id": "k2", "seq": 2}
        assert seqs(agent) == [1, 2]
        assert TimelineRow.objects.get(agent=agent, seq=2).item["text"] == "b"

    @pytest.mark.parametrize(
        ("stored", "retried", "same"),
        [
            (
                {"type": "x", "a": 1, "b": [1, {"c": "d", "e": None}]},
                {"b": [1, {"e": None, "c": "d"}], "a": 1, "type": "x"},
                True,
            ),
            ({"type": "x", "n": 1}, {"type": "x", "n": 1.0}, True),
            # jsonb reads 1e300 back as the integer 10**300, which Python's == finds unequal to the float.
            ({"type": "x", "n": 1e300, "m": 0.1}, {"type": "x", "n": 1e300, "m": 0.1}, True),
            ({"type": "x", "n": 1e300}, {"type": "x", "n": 10**300}, True),
            ({"type": "x", "n": 1}, {"type": "x", "n": True}, False),
            ({"type": "x", "n": 0}, {"type": "x", "n": None}, False),
            ({"type": "x", "n": "1"}, {"type": "x", "n": 1}, False),
            ({"type": "x", "l": [1, 2]}, {"type": "x", "l": [2, 1]}, False),
            ({"type": "x", "o": {}}, {"type": "x", "o": {"k": None}}, False),
            ({"type": "x"}, {"type": "y"}, False),
        ],
    )
    def test_items_are_compared_as_json_whatever_the_database_stored(self, stored, retried, same):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=stored, item_id="k")])
        retry = [NewTimelineItem(item=retried, item_id="k")]
        if same:
            assert append_timeline_items(agent_id=agent.pk, items=retry).replayed == 1
        else:
            with pytest.raises(ItemConflict):
                append_timeline_items(agent_id=agent.pk, items=retry)
        assert seqs(agent) == [1]

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
        assert agent.timeline_head.head_seq == 0

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


T0 = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)


def checked(n, item_id=None):
    return PendingRow(
        item={"type": "assistant_message", "text": f"row {n}"},
        item_type="assistant_message",
        item_id=item_id,
        committed_at=T0 + dt.timedelta(seconds=n),
    )


class Heard:
    """Collects ``timeline_committed`` while connected."""

    def __init__(self):
        self.events = []

    def __call__(self, **kwargs):
        self.events.append((kwargs["agent_id"], kwargs["head_seq"], kwargs["epoch"]))

    def __enter__(self):
        timeline_committed.connect(self, weak=False, dispatch_uid="bulk-test")
        return self

    def __exit__(self, *exc):
        timeline_committed.disconnect(dispatch_uid="bulk-test")


class TestBulkAppend:
    def test_rows_follow_the_existing_rows_contiguously_and_move_the_head(self):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[msg("a"), msg("b")])
        result = bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1, "x1"), checked(2), checked(3, "x3")])
        assert (result.first_seq, result.head_seq, result.created) == (3, 5, 3)
        agent.refresh_from_db()
        assert agent.timeline_head.head_seq == 5 and seqs(agent) == [1, 2, 3, 4, 5]
        assert result.epoch == agent.timeline_head.epoch
        stored = list(
            TimelineRow.objects.filter(agent=agent, seq__gt=2)
            .order_by("seq")
            .values_list("seq", "committed_at", "item_type", "item", "item_id")
        )
        assert stored == [
            (3, T0 + dt.timedelta(seconds=1), "assistant_message", checked(1).item, "x1"),
            (4, T0 + dt.timedelta(seconds=2), "assistant_message", checked(2).item, None),
            (5, T0 + dt.timedelta(seconds=3), "assistant_message", checked(3).item, "x3"),
        ]
        # The API append goes on from the head the bulk append left.
        assert [r.seq for r in append_timeline_items(agent_id=agent.pk, items=[msg("c")]).rows] == [6]

    def test_rows_stream_in_batches(self):
        agent = AgentFactory()
        batches = []
        result = bulk_append_timeline_rows(
            agent_id=agent.pk, rows=(checked(n) for n in range(1, 6)), batch_size=2, on_batch=batches.append
        )
        assert batches == [2, 2, 1] and result.created == 5
        assert seqs(agent) == [1, 2, 3, 4, 5]

    def test_no_rows_change_nothing(self, django_capture_on_commit_callbacks):
        agent = AgentFactory()
        with django_capture_on_commit_callbacks() as callbacks:
            result = bulk_append_timeline_rows(agent_id=agent.pk, rows=[])
        assert (result.first_seq, result.head_seq, result.created) == (1, 0, 0)
        assert callbacks == [] and seqs(agent) == []

    def test_archived_agent_is_refused_unless_allowed(self):
        agent = AgentFactory()
        archive_agent(agent=agent)
        with pytest.raises(ArchivedConflict):
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1)])
        assert seqs(agent) == []
        result = bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1)], allow_archived=True)
        assert result.head_seq == 1 and seqs(agent) == [1]

    def test_unknown_agent_and_wrong_expected_head_are_refused(self):
        agent = AgentFactory()
        with pytest.raises(NotFound):
            bulk_append_timeline_rows(agent_id="nobody", rows=[checked(1)])
        bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1)], expected_head_seq=0)
        with pytest.raises(SeqConflict) as exc:
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(2)], expected_head_seq=0)
        assert exc.value.extra == {"head_seq": 1} and seqs(agent) == [1]

    @pytest.mark.parametrize("batch_size", [1, 5000])
    def test_an_item_id_already_committed_is_refused_with_its_seq_and_stores_nothing(self, batch_size):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[msg("a", "k0"), msg("b", "k1")])
        with pytest.raises(ItemConflict) as exc:
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1), checked(2, "k1")], batch_size=batch_size)
        assert exc.value.extra == {"item_id": "k1", "seq": 2}
        agent.refresh_from_db()
        assert agent.timeline_head.head_seq == 2 and seqs(agent) == [1, 2]

    def test_an_item_id_repeated_in_a_later_batch_of_the_call_is_refused(self):
        agent = AgentFactory()
        with pytest.raises(ItemConflict) as exc:
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1, "k1"), checked(2, "k1")], batch_size=1)
        assert exc.value.extra == {"item_id": "k1", "seq": 1}
        assert seqs(agent) == []

    def test_an_item_id_repeated_inside_one_batch_is_the_callers_to_prevent(self):
        agent = AgentFactory()
        with pytest.raises(IntegrityError):
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1, "k1"), checked(2, "k1")])
        assert seqs(agent) == []


@pytest.mark.django_db(transaction=True)
class TestBulkAppendInTheCallersTransaction:
    def test_signal_fires_once_after_the_callers_commit(self):
        agent = AgentFactory()
        with Heard() as heard:
            with transaction.atomic():
                bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(n) for n in range(1, 6)], batch_size=2)
                assert heard.events == []
            assert heard.events == [(agent.pk, 5, agent.timeline_head.epoch)]
        assert seqs(agent) == [1, 2, 3, 4, 5]

    def test_a_rollback_of_the_caller_leaves_nothing_and_says_nothing(self):
        agent = AgentFactory()
        with Heard() as heard, pytest.raises(RuntimeError), transaction.atomic():
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1), checked(2)])
            raise RuntimeError("the caller gives up")
        assert heard.events == [] and seqs(agent) == []
        agent.refresh_from_db()
        assert agent.timeline_head.head_seq == 0

    def test_on_its_own_it_commits_and_announces(self):
        agent = AgentFactory()
        with Heard() as heard:
            bulk_append_timeline_rows(agent_id=agent.pk, rows=[checked(1)])
        assert heard.events == [(agent.pk, 1, agent.timeline_head.epoch)]


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
    assert agent.timeline_head.head_seq == total
    assert TimelineRow.objects.filter(agent=agent).values("item_id").distinct().count() == total
