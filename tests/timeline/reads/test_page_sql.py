"""The page read's fixed SQL gives what the ORM gives, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db.models.functions import Now
from django.utils import timezone

from tests.factories import AgentFactory
from timeline.models import ROW_FIELDS, TimelineRow
from timeline.selectors import read_timeline
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

#: Items whose text a careless encoder or decoder would change.
AWKWARD_ITEMS = [
    {"type": "user_message", "text": "plain"},
    {"type": "assistant_message", "text": 'é ü 中文 🙂 \u2028 \u2029 " \\ \n\t'},
    {"type": "custom_event", "text": "numbers", "big": 123456789012345678901234567890, "neg": -(2**63) - 1},
    {"type": "custom_event", "text": "floats", "f": [1e16, 1e-7, 0.1, 2.5, -0.0, 1.7976931348623157e308]},
    {"type": "custom_event", "text": "nested", "a": {"b": [None, True, False, {"c": []}]}, "z": 1, "m": 2},
]


@pytest.fixture
def awkward_agent():
    agent = AgentFactory()
    append_timeline_items(
        agent_id=agent.pk,
        items=[NewTimelineItem(item=item, item_id=f"k{i}") for i, item in enumerate(AWKWARD_ITEMS)],
    )
    return agent


def orm_rows(agent_id: str) -> list[dict]:
    # A row without extra keys holds NULL there; a page says {}.
    rows = TimelineRow.objects.filter(agent_id=agent_id).order_by("seq")
    # A row never updated holds NULL as its revision; a page says 1.
    rows = rows.values(*ROW_FIELDS, "revision")
    return [{**row, "extra": row["extra"] or {}, "revision": row["revision"] or 1} for row in rows]


def test_rows_are_what_the_orm_reads(awkward_agent):
    page = read_timeline(agent_id=awkward_agent.pk)
    expected = orm_rows(awkward_agent.pk)
    assert page.rows == expected
    # (PostgreSQL's jsonb keeps numbers as numerics: the ORM too reads 1e16 back as an int.)
    assert [row["item"]["text"] for row in page.rows] == [item["text"] for item in AWKWARD_ITEMS]
    assert all(timezone.is_aware(row["committed_at"]) for row in page.rows)


def test_items_as_json_hold_the_same_values(awkward_agent):
    page = read_timeline(agent_id=awkward_agent.pk, items_as_json=True)
    assert page.items_as_json
    assert all(isinstance(row["item"], str) for row in page.rows)
    assert [json.loads(row["item"]) for row in page.rows] == [row["item"] for row in orm_rows(awkward_agent.pk)]
    decoded = read_timeline(agent_id=awkward_agent.pk)
    assert [{**row, "item": json.loads(row["item"]), "extra": json.loads(row["extra"])} for row in page.rows] == (
        decoded.rows
    )


def test_projected_pages_always_decode_their_items(awkward_agent):
    page = read_timeline(agent_id=awkward_agent.pk, projection="projected", items_as_json=True)
    assert not page.items_as_json
    assert [entry["item"] for entry in page.rows] == [row["item"] for row in orm_rows(awkward_agent.pk)]


def test_times_keep_their_microseconds_and_whole_seconds():
    agent = AgentFactory()
    append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item={"type": "user_message", "text": "t"})] * 2)
    whole = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    TimelineRow.objects.filter(agent_id=agent.pk, seq=1).update(committed_at=whole)
    TimelineRow.objects.filter(agent_id=agent.pk, seq=2).update(committed_at=Now())
    page = read_timeline(agent_id=agent.pk)
    assert page.rows[0]["committed_at"] == whole
    assert page.rows == orm_rows(agent.pk)


def test_a_page_read_while_queries_are_recorded_gives_the_same_rows(awkward_agent):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for direction, seq in (("tail", None), ("before", 4), ("after", 1), ("after", None)):
        unrecorded = read_timeline(agent_id=awkward_agent.pk, direction=direction, seq=seq, limit=3)
        with CaptureQueriesContext(connection) as queries:
            recorded = read_timeline(agent_id=awkward_agent.pk, direction=direction, seq=seq, limit=3)
        assert len(queries) == 2
        assert recorded == unrecorded


@pytest.mark.django_db(transaction=True)
def test_a_page_read_after_the_connection_was_closed_opens_a_new_one():
    from django.db import connection

    awkward_agent = AgentFactory()
    append_timeline_items(agent_id=awkward_agent.pk, items=[NewTimelineItem(item=item) for item in AWKWARD_ITEMS])
    before = read_timeline(agent_id=awkward_agent.pk)
    connection.close()
    assert read_timeline(agent_id=awkward_agent.pk) == before


def test_stored_times_in_another_form_read_as_the_orm_reads_them(awkward_agent):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("only SQLite keeps a time as the text it was written in")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE timeline_timelinerow SET committed_at = %s WHERE agent_id = %s AND seq = 2",
            ["2026-01-02T03:04:05.5+02:00", awkward_agent.pk],
        )
    page = read_timeline(agent_id=awkward_agent.pk)
    assert page.rows == orm_rows(awkward_agent.pk)
    assert page.rows[1]["committed_at"] == dt.datetime(2026, 1, 2, 1, 4, 5, 500000, tzinfo=dt.UTC)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("direction", "seq"), [("tail", None), ("after", 0), ("before", 2)])
def test_a_read_after_the_connection_was_closed_opens_it_again(direction, seq):
    # Django closes a connection past CONN_MAX_AGE when a request starts and opens it
    # again with the next cursor; the page read must not need it open beforehand.
    from django.db import connection

    AgentFactory(agent_id="reopened")
    append_timeline_items(agent_id="reopened", items=[NewTimelineItem(item={"type": "user_message", "text": "hi"})])
    connection.close()
    page = read_timeline(agent_id="reopened", direction=direction, seq=seq, items_as_json=True)
    assert [row["seq"] for row in page.rows] == [1]
