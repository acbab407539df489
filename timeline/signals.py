"""``timeline_committed`` is sent after an append commits, with ``agent_id``,
``head_seq`` and ``epoch``. It only says "rows up to head_seq exist": live
subscribers always read the rows themselves from the database, so a lost
notification can delay a row but never lose it.
"""

from __future__ import annotations

from typing import Protocol

from django.dispatch import Signal

# Sent on every append, always by TimelineRow: the receivers are
# looked up once per sender (the cache is dropped on every connect/disconnect).
timeline_committed = Signal(use_caching=True)


class LiveNotice(Protocol):
    """The live hub's word inside an append's transaction (PostgreSQL's NOTIFY, which
    the server delivers at the commit and never after a rollback).

    A direct line rather than a signal: the append asks for the notice first, so that
    it can send it in the same statement as its rows (one round trip, no signal
    dispatch, on every append)."""

    def arguments(self, *, agent_id: str, head_seq: int, epoch: str) -> tuple[str, str] | None:
        """``(channel, payload)`` of the one ``pg_notify`` announcing the commit, for the
        append to send with its own statement; None when it cannot (nothing goes with
        the transaction, or the message needs several NOTIFYs: then ``send``)."""

    def send(self, *, agent_id: str, head_seq: int, epoch: str) -> None:
        """Send the notice now, inside the transaction (nothing when the hub's transport
        sends after the commit)."""


_live_notice: LiveNotice | None = None


def set_live_notice(notice: LiveNotice) -> None:
    """Install the live hub's notice (``timeline.live.hub.connect_signals``)."""
    global _live_notice
    _live_notice = notice


def live_notice() -> LiveNotice | None:
    return _live_notice


#: Sent after a committed row's update commits (``timeline.writes.revisions.update_row``), with
#: ``agent_id``, ``seq``, ``update_seq`` and ``epoch``. Like ``timeline_committed`` it only
#: says when to read: live subscribers read the updates themselves.
timeline_updated = Signal(use_caching=True)
