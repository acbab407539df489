"""The page read's fixed SQL gives what the ORM gives, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db.models.functions import Now
from django.utils import timezone

from kernel import fastjson
from tests.factories import AgentFactory
from timeline.models import TimelineRow
from timeline.page_sql import ROW_FIELDS
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
    return list(TimelineRow.objects.filter(agent_id=agent_id).order_by("seq").values(*ROW_FIELDS))


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
    assert [{**row, "item": json.loads(row["item"])} for row in page.rows] == decoded.rows


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


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', ' {"a": 1}', '{"a": 1}\n', "[1.5, 123456789012345678901234567890]", '"\\ud800"', "[]", "null"],
)
def test_fastjson_loads_is_json_loads(text):
    assert fastjson.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a":', "", '{"a": 1} x', "{'a': 1}"])
def test_fastjson_loads_refuses_what_json_refuses(text):
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        fastjson.loads(text)


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
