"""The history checker on hand-built histories: a valid one (a kill, a restore) passes, and each anomaly is named."""

from __future__ import annotations

from tests.support.history_check import (
    DUPLICATED,
    LOST,
    PHANTOM,
    REORDERED,
    STREAM,
    Append,
    History,
    Read,
    Restore,
    Segment,
    check,
    summary,
)

A, E0, E1 = "agent", "e0", "e1"


def ack(items: str, seqs: tuple[int, ...], at: float, epoch: str = E0) -> Append:
    """An acknowledged append of ``items`` (one letter each), invoked at ``at``, answered 0.1 later."""
    return Append(A, tuple(items), invoked=at, completed=at + 0.1, ok=True, epoch=epoch, seqs=seqs)


def read(items: str, at: float, epoch: str = E0, *, first: int = 1) -> Read:
    return Read(A, invoked=at, completed=at + 0.1, epoch=epoch, rows=tuple(enumerate(items, start=first)))


def kinds(history: History) -> list[str]:
    return sorted({anomaly.kind for anomaly in check(history)})


def valid_history() -> History:
    """a, b, c acknowledged; d unanswered (a kill) but committed; snapshot at 5 after a..d;
    e acknowledged after the snapshot and rolled back by the restore; f in the new epoch."""
    return History(
        appends=[
            ack("ab", (1, 2), 1),
            ack("c", (3,), 2),
            Append(A, ("d",), invoked=3, ok=None),
            Append(A, ("x",), invoked=3.5, completed=3.6, ok=False),  # refused: nothing written
            ack("e", (5,), 6),
            ack("f", (5,), 9, E1),
        ],
        reads=[read("abc", 2.5), read("abcd", 4), read("abcde", 7), read("abcd", 8.5, E1), read("abcdf", 10, E1)],
        segments=[
            Segment("s1", A, E0, 0, ((1, "a"), (2, "b"))),
            Segment("s1", A, E0, 2, ((3, "c"), (4, "d"), (5, "e"))),
            Segment("s1", A, E1, 4, ((5, "f"),), reset=True),
        ],
        restores=[Restore(A, base_epoch=E0, epoch=E1, snapshot_invoked=5, snapshot_completed=5.5)],
    )


def test_a_valid_history_with_a_kill_and_a_restore_has_no_anomaly():
    assert check(valid_history()) == []
    assert summary([]) == "no anomaly"


def test_an_acknowledged_row_missing_from_a_later_read_is_lost():
    history = valid_history()
    history.reads.append(read("ab", 3))  # c was acknowledged at 2.1
    assert kinds(history) == [LOST]


def test_a_read_that_skips_a_seq_is_lost():
    history = valid_history()
    history.reads.append(Read(A, 7, 7.1, E0, ((1, "a"), (2, "b"), (4, "d"), (5, "e"))))
    found = check(history)
    assert {a.kind for a in found} == {LOST}
    assert any("seqs 3..3 are missing" in a.detail for a in found)


def test_an_unanswered_row_once_read_must_stay():
    """d was never acknowledged, but a read saw it: a later read without it lost it."""
    history = valid_history()
    history.reads.append(read("abc", 4.5))
    assert kinds(history) == [LOST]


def test_a_row_read_twice_is_duplicated():
    history = valid_history()
    history.reads.append(read("abcdea", 7.5))
    assert DUPLICATED in kinds(history)


def test_an_item_acknowledged_at_two_seqs_is_duplicated():
    history = valid_history()
    history.appends.append(ack("c", (4,), 2.2))
    assert DUPLICATED in kinds(history)


def test_rows_at_other_seqs_are_reordered():
    history = valid_history()
    history.reads.append(read("bacde", 7.5))
    assert kinds(history) == [REORDERED]


def test_rows_out_of_order_in_a_read_are_reordered():
    history = valid_history()
    history.reads.append(Read(A, 7, 7.1, E0, ((1, "a"), (3, "c"), (2, "b"), (4, "d"), (5, "e"))))
    assert REORDERED in kinds(history)


def test_a_row_never_written_is_a_phantom():
    history = valid_history()
    history.reads.append(read("abcdez", 7.5))
    assert kinds(history) == [PHANTOM]


def test_a_row_whose_append_was_refused_is_a_phantom():
    history = valid_history()
    history.reads.append(read("abcdex", 7.5))
    assert kinds(history) == [PHANTOM]


def test_a_row_the_restore_rolled_back_is_a_phantom_in_the_new_epoch():
    history = valid_history()
    # Without f (acknowledged at seq 5 in e1), so nothing but the resurrected e is wrong.
    history.appends, history.reads, history.segments = history.appends[:-1], history.reads[:4], history.segments[:2]
    assert check(history) == []
    history.reads.append(read("abcde", 11, E1))
    found = check(history)
    assert [a.kind for a in found] == [PHANTOM]
    assert "rolled it back" in found[0].detail


def test_a_row_acknowledged_before_the_snapshot_missing_after_the_restore_is_lost():
    history = valid_history()
    history.reads.append(read("ab", 11, E1))
    assert LOST in kinds(history)


def test_rows_acknowledged_after_the_snapshot_may_be_gone_after_the_restore():
    """e (acknowledged after the snapshot) is absent in e1, and f takes its seq: no anomaly."""
    history = valid_history()
    history.reads.append(read("abcdf", 12, E1))
    assert check(history) == []


def test_a_stream_that_skips_a_row_is_not_a_prefix():
    history = valid_history()
    history.segments.append(Segment("s2", A, E0, 0, ((1, "a"), (3, "c"))))
    assert kinds(history) == [STREAM]


def test_a_stream_sending_another_row_than_the_committed_one_is_not_a_prefix():
    history = valid_history()
    history.segments.append(Segment("s2", A, E0, 1, ((2, "c"),)))
    assert kinds(history) == [STREAM]


def test_a_stream_that_resumes_past_its_cursor_is_not_a_prefix():
    history = valid_history()
    history.segments += [Segment("s2", A, E0, 0, ((1, "a"),)), Segment("s2", A, E0, 2, ((3, "c"),))]
    assert kinds(history) == [STREAM]


def test_a_stream_changing_epoch_without_a_reset_is_not_a_prefix():
    history = valid_history()
    history.segments += [Segment("s2", A, E0, 0, ((1, "a"),)), Segment("s2", A, E1, 1, ((2, "b"),))]
    assert kinds(history) == [STREAM]


def test_a_stream_sending_a_row_never_written_is_a_phantom():
    history = valid_history()
    history.segments.append(Segment("s2", A, E1, 5, ((6, "z"),), reset=True))
    assert kinds(history) == [PHANTOM]


def test_the_summary_counts_each_kind():
    history = valid_history()
    history.reads += [read("ab", 3), read("abcdez", 7.5)]
    text = summary(check(history))
    assert text.splitlines()[0] == "lost: 2, phantom: 1"  # c missing: acknowledged, and read before
    assert "z at seq 6 was never written" in text
