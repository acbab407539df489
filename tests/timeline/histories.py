"""Timelines whose retained range starts above seq 1, as a carried-over Paseo history has."""

from __future__ import annotations

import datetime as dt

from timeline.services import PendingRow, bulk_append_timeline_rows

T0 = dt.datetime(2024, 3, 1, 10, 0, tzinfo=dt.UTC)


def carry_over_history(
    agent_id: str, *, start_seq: int, count: int, epoch: str = "paseo-epoch", item_type="user_message"
):
    """Rows start_seq..start_seq+count-1 in ``epoch``, a second apart from T0."""
    rows = [
        PendingRow(
            item={"type": item_type, "text": f"row {seq}"},
            item_type=item_type,
            item_id=f"paseo-{seq}",
            committed_at=T0 + dt.timedelta(seconds=seq),
        )
        for seq in range(start_seq, start_seq + count)
    ]
    return bulk_append_timeline_rows(agent_id=agent_id, rows=rows, start_seq=start_seq, epoch=epoch)
