"""bulkInsert and replaceCommitted with thousands of rows in one call: all or nothing, bounded by the body limit.

Rows are Paseo-shaped: turns of a user message, reasoning and assistant chunks, each row with its
``turn_id`` and provider keys, in an epoch Paseo minted with ``randomUUID()``."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from django.db import DatabaseError, connection

from tests.factories import AgentFactory
from tests.timeline.api.test_api import client_with, url
from timeline.models import TimelineHead, TimelineRow
from timeline.rows import ReadRow
from timeline.selectors import MAX_READ_LIMIT
from timeline.writes.counters import check_counters
from timeline.writes.history import insert_rows

pytestmark = pytest.mark.django_db(transaction=True)

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
#: Room for 20,000 Paseo rows in one body (about 6 MB); the default limit is 1 MiB.
ROOMY_BODY = 16 * 1024 * 1024


@pytest.fixture
def api():
    return client_with()


@pytest.fixture
def roomy_bodies(settings):
    settings.CHARTR_MAX_BODY_BYTES = ROOMY_BODY
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = ROOMY_BODY


def paseo_row(seq: int, *, turns: str = "turn") -> dict:
    """Paseo's ``AgentTimelineRow`` in the API's spelling: a turn is a user message, reasoning, then answer chunks."""
    kind = ("user_message", "reasoning", "assistant_message", "assistant_message")[seq % 4]
    item = {"type": kind, "text": f"{kind} {seq}: " + "words " * (seq % 7)}
    if kind == "assistant_message":
        item["messageId"] = f"msg-{seq // 4}"
    at = T0 + dt.timedelta(milliseconds=250 * seq)
    return {
        "seq": seq,
        "item": item,
        "committed_at": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "turn_id": f"{turns}-{seq // 4}",
        "provider_message_id": str(uuid.UUID(int=seq)),
        "provider_timeline_item_id": f"item-{seq}",
    }


def paseo_rows(count: int, **keys) -> list[dict]:
    return [paseo_row(seq, **keys) for seq in range(1, count + 1)]


def body(rows: list[dict]) -> bytes:
    return json.dumps({"rows": rows}).encode()


def send(api, method: str, agent_id: str, rows: list[dict]):
    path = f"{url(agent_id)}/rows" if method == "post" else url(agent_id)
    return getattr(api, method)(path, body(rows), content_type="application/json")


def read_all(api, agent_id: str) -> list[dict]:
    """Every row, a page of MAX_READ_LIMIT at a time (``limit=0`` is bounded by CHARTR_TIMELINE_READ_ALL_MAX_ROWS)."""
    rows, seq = [], 0
    while True:
        page = api.get(url(agent_id), {"direction": "after", "seq": seq, "limit": MAX_READ_LIMIT}).json()
        rows += page["rows"]
        if not page["has_newer"]:
            return rows
        seq = rows[-1]["seq"]


def assert_read_back(api, agent_id: str, sent: list[dict]) -> None:
    read = read_all(api, agent_id)
    assert len(read) == len(sent)
    for got, row in zip(read, sent, strict=True):
        assert (got["seq"], got["item"], got["turn_id"]) == (row["seq"], row["item"], row["turn_id"])
        assert (got["provider_message_id"], got["provider_timeline_item_id"]) == (
            row["provider_message_id"],
            row["provider_timeline_item_id"],
        )
        assert dt.datetime.fromisoformat(got["committed_at"]) == dt.datetime.fromisoformat(row["committed_at"])


def head(agent_id: str) -> TimelineHead:
    return TimelineHead.objects.get(pk=agent_id)


@pytest.mark.parametrize("count", [5_000, 20_000])
def test_one_call_inserts_thousands_of_rows_whole(api, roomy_bodies, committed, count):
    agent = AgentFactory()
    sent = paseo_rows(count)
    created = send(api, "post", agent.pk, sent)
    assert created.status_code == 201, created.content[:500]
    answer = created.json()
    assert (answer["inserted"], answer["head_seq"], answer["changed"]) == (count, count, True)
    assert answer["window"] == {"min_seq": 1, "max_seq": count, "next_seq": count + 1}
    stored = head(agent.pk)
    assert (stored.head_seq, stored.min_seq, stored.committed_rows) == (count, 1, count)
    assert check_counters(repair=False) == []  # committed_bytes is the rows' size
    # The live stream is told once for the call, not once per row or batch.
    assert committed == [(count, stored.epoch)]
    assert_read_back(api, agent.pk, sent)


def test_the_same_20000_rows_again_are_a_no_op(api, roomy_bodies, committed):
    agent = AgentFactory()
    sent = paseo_rows(20_000)
    assert send(api, "post", agent.pk, sent).status_code == 201
    before = head(agent.pk)
    committed.clear()
    again = send(api, "post", agent.pk, sent)
    assert again.status_code == 200, again.content[:500]
    assert (again.json()["inserted"], again.json()["changed"], again.json()["head_seq"]) == (0, False, 20_000)
    after = head(agent.pk)
    assert (after.epoch, after.head_seq, after.committed_rows, after.committed_bytes) == (
        before.epoch,
        before.head_seq,
        before.committed_rows,
        before.committed_bytes,
    )
    assert committed == []
    assert TimelineRow.objects.filter(agent_id=agent.pk).count() == 20_000


def store_rows(rows: list[dict]) -> list[ReadRow]:
    return [
        ReadRow(
            seq=row["seq"],
            item=row["item"],
            item_type=row["item"]["type"],
            committed_at=dt.datetime.fromisoformat(row["committed_at"]),
            turn_id=row["turn_id"],
            provider_message_id=row["provider_message_id"],
            provider_timeline_item_id=row["provider_timeline_item_id"],
        )
        for row in rows
    ]


def test_a_conflict_at_row_19999_of_20000_writes_nothing(api, roomy_bodies, committed):
    agent = AgentFactory()
    insert_rows(agent_id=agent.pk, rows=store_rows(paseo_rows(19_999)))
    before = head(agent.pk)
    committed.clear()
    sent = paseo_rows(20_000)
    sent[19_998] = {**sent[19_998], "turn_id": "another-turn"}  # seq 19,999, already committed otherwise
    refused = send(api, "post", agent.pk, sent)
    assert refused.status_code == 409, refused.content[:500]
    error = refused.json()["error"]
    assert (error["code"], error["seq"], error["head_seq"]) == ("seq_conflict", 19_999, 19_999)
    after = head(agent.pk)
    assert (after.head_seq, after.committed_rows, after.committed_bytes) == (19_999, 19_999, before.committed_bytes)
    assert not TimelineRow.objects.filter(agent_id=agent.pk, seq=20_000).exists()
    assert TimelineRow.objects.get(agent_id=agent.pk, seq=19_999).turn_id == paseo_row(19_999)["turn_id"]
    assert committed == []


def test_a_failure_in_the_last_batch_rolls_back_the_batches_before_it(committed):
    """The rows go in batches inside one transaction: a batch failing takes the earlier ones with it."""
    agent = AgentFactory()

    def fail_at_seq_19999(execute, sql, params, many, context):
        if many and any(values[1] == 19_999 for values in params):
            raise DatabaseError("the disk is full")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail_at_seq_19999), pytest.raises(DatabaseError, match="disk is full"):
        insert_rows(agent_id=agent.pk, rows=store_rows(paseo_rows(20_000)))
    assert not TimelineRow.objects.filter(agent_id=agent.pk).exists()
    stored = head(agent.pk)
    assert (stored.head_seq, stored.committed_rows, stored.committed_bytes) == (0, 0, 0)
    assert committed == []


def test_the_body_limit_bounds_a_call_and_a_body_over_it_is_413_writing_nothing(api, settings):
    agent = AgentFactory()
    sent = paseo_rows(5_000)
    settings.CHARTR_MAX_BODY_BYTES = len(body(sent)) - 1
    refused = send(api, "post", agent.pk, sent)
    assert refused.status_code == 413, refused.content[:500]
    assert refused.json()["error"]["code"] == "payload_too_large"
    assert not TimelineRow.objects.filter(agent_id=agent.pk).exists() and head(agent.pk).head_seq == 0
    settings.CHARTR_MAX_BODY_BYTES = len(body(sent))
    assert send(api, "post", agent.pk, sent).status_code == 201
    assert head(agent.pk).committed_rows == 5_000


def test_20000_rows_at_the_default_limit_are_413_and_write_nothing(api, committed):
    agent = AgentFactory()
    refused = send(api, "post", agent.pk, paseo_rows(20_000))
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "payload_too_large"
    assert not TimelineRow.objects.filter(agent_id=agent.pk).exists() and committed == []


def test_replace_with_5000_rows_in_one_call(api, roomy_bodies, committed):
    agent = AgentFactory()
    assert send(api, "post", agent.pk, paseo_rows(30, turns="old")).status_code == 201
    old_epoch = head(agent.pk).epoch
    committed.clear()
    sent = paseo_rows(5_000, turns="new")
    replaced = send(api, "put", agent.pk, sent)
    assert replaced.status_code == 200, replaced.content[:500]
    answer = replaced.json()
    assert (answer["inserted"], answer["head_seq"], answer["changed"]) == (5_000, 5_000, True)
    assert answer["epoch"] != old_epoch and uuid.UUID(answer["epoch"]).version == 4
    stored = head(agent.pk)
    assert (stored.head_seq, stored.min_seq, stored.committed_rows, stored.epoch) == (5_000, 1, 5_000, answer["epoch"])
    assert check_counters(repair=False) == []
    assert committed == [(5_000, answer["epoch"])]
    assert_read_back(api, agent.pk, sent)
    again = send(api, "put", agent.pk, sent)
    assert (again.json()["changed"], again.json()["epoch"]) == (False, answer["epoch"])
