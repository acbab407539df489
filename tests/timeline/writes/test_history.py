"""Paseo's store writes over HTTP: bulkInsert, replaceCommitted, deleteAgent, beginBackfill/completeBackfill."""

from __future__ import annotations

import re

import pytest
from django.db import transaction

from snapshots.services import archive_agent
from tests.factories import AgentFactory
from tests.timeline.api.test_api import client_with, url
from timeline.models import TimelineHead, TimelineRow
from timeline.writes.history import MAX_ROW_SEQ

pytestmark = pytest.mark.django_db(transaction=True)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture
def api():
    return client_with()


def row(seq: int, text: str = "", **keys) -> dict:
    return {
        "seq": seq,
        "item": {"type": "assistant_message", "text": text or f"row {seq}"},
        "committed_at": f"2026-01-01T00:00:{seq % 60:02d}.000+00:00",
        **keys,
    }


def insert(api, agent_id, rows):
    return api.post(f"{url(agent_id)}/rows", {"rows": rows}, format="json")


def seqs(agent_id) -> list[int]:
    return list(TimelineRow.objects.filter(agent_id=agent_id).order_by("seq").values_list("seq", flat=True))


def head(agent_id) -> TimelineHead:
    return TimelineHead.objects.get(pk=agent_id)


# --- bulkInsert ---------------------------------------------------------------


def test_insert_puts_rows_at_their_seqs_and_moves_the_head(api, committed):
    agent = AgentFactory()
    created = insert(api, agent.pk, [row(2), row(1), row(3, revert_token=None, turn_id="t")])
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["inserted"], body["head_seq"], body["changed"]) == (3, 3, True)
    assert body["window"] == {"min_seq": 1, "max_seq": 3, "next_seq": 4}
    stored = head(agent.pk)
    assert (stored.head_seq, stored.min_seq, stored.committed_rows) == (3, 1, 3)
    assert stored.committed_bytes > 0 and stored.last_appended_at is not None
    assert committed == [(3, stored.epoch)]
    rows = api.get(url(agent.pk), {"direction": "after", "seq": 0}).json()["rows"]
    assert [r["seq"] for r in rows] == [1, 2, 3]
    assert rows[0]["committed_at"] == "2026-01-01T00:00:01+00:00"
    assert rows[2]["revert_token"] is None and rows[2]["turn_id"] == "t" and "revert_token" not in rows[0]


def test_the_same_rows_again_are_a_no_op_and_new_ones_go_on(api):
    agent = AgentFactory()
    assert insert(api, agent.pk, [row(1), row(2)]).status_code == 201
    again = insert(api, agent.pk, [row(1), row(2)])
    assert again.status_code == 200 and again.json()["inserted"] == 0 and again.json()["changed"] is False
    more = insert(api, agent.pk, [row(1), row(2), row(3)])
    assert more.status_code == 201 and more.json()["inserted"] == 1
    assert seqs(agent.pk) == [1, 2, 3] and head(agent.pk).committed_rows == 3


@pytest.mark.parametrize(
    "changed",
    [
        {"item": {"type": "assistant_message", "text": "other"}},
        {"committed_at": "2026-01-01T00:00:09+00:00"},
        {"turn_id": "t2"},
        {"provider_message_id": "m"},
        {"revert_token": None},
    ],
)
def test_a_different_row_at_a_taken_seq_is_a_conflict_and_stores_nothing(api, changed):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1), row(2)])
    refused = insert(api, agent.pk, [{**row(1), **changed}, row(3)])
    assert refused.status_code == 409, refused.content
    error = refused.json()["error"]
    assert error["code"] == "seq_conflict" and error["seq"] == 1 and error["head_seq"] == 2
    assert seqs(agent.pk) == [1, 2] and head(agent.pk).head_seq == 2


def test_a_new_row_below_the_head_is_a_conflict(api):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1), row(3)])  # a hole at 2
    refused = insert(api, agent.pk, [row(2)])
    assert refused.status_code == 409 and refused.json()["error"]["seq"] == 2
    assert seqs(agent.pk) == [1, 3]


def test_a_history_starting_later_keeps_its_seqs(api):
    agent = AgentFactory()
    body = insert(api, agent.pk, [row(5), row(6), row(7)]).json()
    assert body["window"] == {"min_seq": 5, "max_seq": 7, "next_seq": 8}
    page = api.get(url(agent.pk), {"direction": "after", "seq": 1, "limit": 1}).json()
    assert page["gap"] is True and [r["seq"] for r in page["rows"]] == [7]


@pytest.mark.parametrize(
    "rows",
    [
        [row(1), {**row(2), "item": {"type": "tool_call"}}],
        [row(0)],
        [row(MAX_ROW_SEQ + 1)],
        [row(1), row(1)],
        [{**row(1), "turnId": "t"}],
        [{"seq": 1, "item": {"type": "user_message", "text": "x"}}],  # no committed_at
        [{**row(1), "committed_at": "2026-01-01T00:00:00"}],
        [],
    ],
)
def test_bad_rows_are_refused_whole(api, rows):
    agent = AgentFactory()
    refused = insert(api, agent.pk, rows)
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["code"] == "invalid"
    assert seqs(agent.pk) == []


def test_the_highest_seq_is_taken(api):
    agent = AgentFactory()
    assert insert(api, agent.pk, [row(MAX_ROW_SEQ)]).status_code == 201
    assert head(agent.pk).head_seq == MAX_ROW_SEQ


def test_writes_refuse_archived_and_unknown_agents(api):
    agent = AgentFactory()
    archive_agent(agent=agent)
    for response in (
        insert(api, agent.pk, [row(1)]),
        api.put(url(agent.pk), {"rows": []}, format="json"),
        api.delete(url(agent.pk)),
        api.post(f"{url(agent.pk)}/backfill"),
    ):
        assert response.status_code == 409 and response.json()["error"]["code"] == "archived"
    assert insert(api, "nobody", [row(1)]).status_code == 404


def test_read_only_tokens_cannot_write(api):
    agent = AgentFactory()
    reader = client_with(read_only=True)
    assert insert(reader, agent.pk, [row(1)]).status_code == 403
    assert reader.delete(url(agent.pk)).status_code == 403


# --- replaceCommitted ---------------------------------------------------------


def test_replace_puts_exactly_these_rows_in_a_new_epoch(api, committed):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1), row(2), row(3)])
    before = head(agent.pk).epoch
    replaced = api.put(url(agent.pk), {"rows": [row(1, "new one"), row(2, "new two")]}, format="json")
    assert replaced.status_code == 200, replaced.content
    body = replaced.json()
    assert UUID.match(body["epoch"]) and body["epoch"] != before
    assert (body["inserted"], body["head_seq"], body["changed"]) == (2, 2, True)
    assert committed[-1] == (2, body["epoch"])
    stored = head(agent.pk)
    assert (stored.epoch, stored.head_seq, stored.committed_rows) == (body["epoch"], 2, 2)
    stale = api.get(url(agent.pk), {"direction": "after", "seq": 1, "epoch": before}).json()
    assert stale["reset"] is True and stale["stale_cursor"] is True
    assert [r["item"]["text"] for r in stale["rows"]] == ["new one", "new two"]


def test_replace_again_with_the_same_rows_changes_nothing(api):
    agent = AgentFactory()
    first = api.put(url(agent.pk), {"rows": [row(1), row(2)]}, format="json").json()
    again = api.put(url(agent.pk), {"rows": [row(2), row(1)]}, format="json").json()
    assert again["changed"] is False and again["epoch"] == first["epoch"] and again["inserted"] == 0
    assert seqs(agent.pk) == [1, 2]


def test_a_refused_replacement_keeps_the_history_and_its_epoch(api):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1)])
    before = head(agent.pk).epoch
    refused = api.put(url(agent.pk), {"rows": [row(1, "x"), {**row(2), "item": {"type": "todo"}}]}, format="json")
    assert refused.status_code == 400
    assert head(agent.pk).epoch == before and seqs(agent.pk) == [1]


def test_replace_with_no_rows_empties_the_timeline(api):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1)])
    body = api.put(url(agent.pk), {"rows": []}, format="json").json()
    assert body["head_seq"] == 0 and body["window"] == {"min_seq": 0, "max_seq": 0, "next_seq": 1}
    assert seqs(agent.pk) == [] and head(agent.pk).committed_rows == 0


def test_replace_refuses_unknown_keys(api):
    agent = AgentFactory()
    refused = api.put(url(agent.pk), {"rows": [], "epoch": "mine"}, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid"


# --- deleteAgent --------------------------------------------------------------


def test_delete_drops_the_rows_and_starts_a_new_epoch(api, committed):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1), row(2)])
    before = head(agent.pk).epoch
    deleted = api.delete(url(agent.pk))
    assert deleted.status_code == 200, deleted.content
    body = deleted.json()
    assert (body["deleted"], body["head_seq"], body["changed"]) == (2, 0, True)
    assert UUID.match(body["epoch"]) and body["epoch"] != before
    assert committed[-1] == (0, body["epoch"])
    stored = head(agent.pk)
    assert (stored.head_seq, stored.min_seq, stored.committed_rows, stored.committed_bytes) == (0, 1, 0, 0)
    again = api.delete(url(agent.pk)).json()
    assert again["changed"] is False and again["epoch"] == body["epoch"]
    appended = api.post(url(agent.pk), {"items": [{"item": {"type": "user_message", "text": "a"}}]}, format="json")
    assert appended.json()["rows"][0]["seq"] == 1


# --- beginBackfill / completeBackfill -------------------------------------------


def test_backfill_drops_the_rows_keeps_the_epoch_and_pages_say_so(api):
    agent = AgentFactory()
    insert(api, agent.pk, [row(1, "truncated"), row(2, "prefix")])
    epoch = head(agent.pk).epoch
    begun = api.post(f"{url(agent.pk)}/backfill")
    assert begun.status_code == 200, begun.content
    assert begun.json()["deleted"] == 2 and begun.json()["backfilling"] is True and begun.json()["epoch"] == epoch
    page = api.get(url(agent.pk)).json()
    assert page["backfilling"] is True and page["rows"] == [] and page["epoch"] == epoch
    assert insert(api, agent.pk, [row(1), row(2), row(3)]).status_code == 201
    assert api.get(url(agent.pk)).json()["backfilling"] is True
    done = api.post(f"{url(agent.pk)}/backfill/complete").json()
    assert done["backfilling"] is False and done["changed"] is True
    page = api.get(url(agent.pk)).json()
    assert page["backfilling"] is False and [r["seq"] for r in page["rows"]] == [1, 2, 3]


def test_backfill_begin_and_complete_repeat_safely(api):
    agent = AgentFactory()
    assert api.post(f"{url(agent.pk)}/backfill").json()["changed"] is True
    assert api.post(f"{url(agent.pk)}/backfill").json()["changed"] is False
    insert(api, agent.pk, [row(1)])
    assert api.post(f"{url(agent.pk)}/backfill/complete").json()["changed"] is True
    again = api.post(f"{url(agent.pk)}/backfill/complete")
    assert again.status_code == 200 and again.json()["changed"] is False
    assert seqs(agent.pk) == [1] and head(agent.pk).backfilling is False


def test_the_writes_run_inside_a_callers_transaction_all_or_nothing():
    from timeline.rows import ReadRow
    from timeline.writes.history import insert_rows

    agent = AgentFactory()
    import datetime as dt

    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    with pytest.raises(RuntimeError), transaction.atomic():
        insert_rows(
            agent_id=agent.pk,
            rows=[
                ReadRow(seq=1, item={"type": "user_message", "text": "a"}, item_type="user_message", committed_at=at)
            ],
        )
        raise RuntimeError
    assert seqs(agent.pk) == [] and head(agent.pk).head_seq == 0


def test_an_integral_float_seq_is_an_integer_as_json_schema_counts_it(api):
    agent = AgentFactory()
    body = '{"rows": [{"seq": 2.0, "item": {"type": "user_message", "text": "a"}, "committed_at": "2026-01-01T00:00:00Z"}]}'
    created = api.generic("POST", f"{url(agent.pk)}/rows", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert seqs(agent.pk) == [2]
    refused = api.generic("POST", f"{url(agent.pk)}/rows", body.replace("2.0", "2.5"), content_type="application/json")
    assert refused.status_code == 400
