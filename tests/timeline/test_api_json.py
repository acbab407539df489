"""timeline/api_json.py: what it reads directly, the serializers read the same way; what it writes,
DRF's renderer would have written with the same content."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo

import pytest
from django.http import QueryDict
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from tests.factories import AgentFactory
from timeline import api_json, serializers
from timeline.selectors import read_timeline
from tokens.services import create_api_token

QUERY_VALUES = st.one_of(
    st.sampled_from(
        [
            "tail",
            "before",
            "after",
            "canonical",
            "projected",
            "",
            " ",
            "0",
            "1",
            "07",
            "100",
            "1000",
            "1001",
            "9223372036854775807",
            "9223372036854775808",
            "99999999999999999999",
            "+3",
            "1_0",
            "-1",
            "١٢",
            " 7",
            "epoch-1",
            " epoch",
            "epoch ",
            "e\x00",
            "x" * 64,
            "x" * 65,
            "TAIL",
        ]
    ),
    st.text(max_size=70),
)
QUERY_NAMES = st.sampled_from(["direction", "seq", "limit", "epoch", "projection", "unknown", "Seq"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(QUERY_NAMES, QUERY_VALUES), max_size=6))
def test_a_query_read_directly_is_read_as_the_serializer_reads_it(pairs):
    query = QueryDict(mutable=True)
    for name, value in pairs:
        query.appendlist(name, value)
    plain = api_json._plain_read_query(query)
    if plain is not None:
        serializer = serializers.ReadQuerySerializer(data=query)
        assert serializer.is_valid(), serializer.errors
        assert dict(serializer.validated_data) == plain


def test_the_usual_queries_are_read_directly():
    for text in (
        "",
        "limit=100",
        "direction=before&seq=50&limit=10",
        "direction=after&seq=0&epoch=e1&projection=projected",
    ):
        assert api_json._plain_read_query(QueryDict(text)) is not None


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "k", " ", "x" * 256, "x" * 257, "a\x00b"]),
    st.text(max_size=10),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ENTRY_KEYS = st.sampled_from(["item", "item_id", "extra"])
ENTRIES = st.one_of(
    st.fixed_dictionaries(
        {"item": st.fixed_dictionaries({"type": st.just("user_message"), "text": st.text(max_size=5)})},
        optional={"item_id": JSON_SCALARS},
    ),
    st.dictionaries(ENTRY_KEYS, JSON_VALUES, max_size=3),
    JSON_VALUES,
)
BODIES = st.one_of(
    st.fixed_dictionaries({"items": st.lists(ENTRIES, max_size=4)}, optional={"expected_head_seq": JSON_SCALARS}),
    st.dictionaries(st.sampled_from(["items", "expected_head_seq", "other"]), JSON_VALUES, max_size=3),
    JSON_VALUES,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(BODIES)
def test_a_body_read_directly_is_read_as_the_serializer_reads_it(body):
    plain = api_json._plain_append_body(body)
    if plain is not None:
        serializer = serializers.AppendRequestSerializer(data=body)
        assert serializer.is_valid(), serializer.errors
        items, expected = plain
        assert [(i.item, i.item_id) for i in items] == [
            (entry["item"], entry.get("item_id")) for entry in serializer.validated_data["items"]
        ]
        assert expected == serializer.validated_data.get("expected_head_seq")


def test_the_usual_bodies_are_read_directly():
    item = {"type": "user_message", "text": "hi"}
    for body in ({"items": [{"item": item}]}, {"items": [{"item": item, "item_id": "k"}], "expected_head_seq": 0}):
        assert api_json._plain_append_body(body) is not None


# --- out: the same content as DRF's renderer, on either database ---------------------------

AWKWARD_ITEMS = [
    {"type": "user_message", "text": "plain"},
    {"type": "assistant_message", "text": 'é ü 中文 🙂 \u2028 \u2029 " \\ \n\t\x7f'},
    {"type": "custom_event", "big": 123456789012345678901234567890, "floats": [1e16, 1e-7, 0.1, -0.0, 2.5]},
    {"type": "custom_event", "nested": {"b": [None, True, False, {"c": []}]}, "z": 1, "a": 2},
]


def drf_page(page) -> bytes:
    """The page as the view rendered it before: DRF's serializer, then DRF's JSONRenderer."""
    document = {
        "agent_id": page.agent_id,
        "epoch": page.epoch,
        "direction": page.direction,
        "rows": [{**row, "committed_at": serializers.render_timestamp(row["committed_at"])} for row in page.rows],
        "window": page.retained.window(),
        "has_older": page.has_older,
        "has_newer": page.has_newer,
        "reset": page.reset,
        "stale_cursor": page.stale_cursor,
        "gap": page.gap,
    }
    return JSONRenderer().render(document)


@pytest.fixture
def api():
    _, raw = create_api_token(name="api-json")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("projection", ["canonical", "projected"])
def test_pages_hold_what_drf_wrote(api, projection):
    agent = AgentFactory()
    appended = api.post(
        f"/api/v1/agents/{agent.pk}/timeline",
        {"items": [{"item": item, "item_id": f"k\u2028{i}"} for i, item in enumerate(AWKWARD_ITEMS)]},
        format="json",
    )
    assert appended.status_code == 201, appended.content
    response = api.get(f"/api/v1/agents/{agent.pk}/timeline", {"projection": projection})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    expected = drf_page(read_timeline(agent_id=agent.pk, projection=projection))
    assert json.loads(response.content) == json.loads(expected)
    # Key order as DRF wrote it, in the envelope and in each row.
    assert list(json.loads(response.content)) == list(json.loads(expected))
    assert [list(row) for row in json.loads(response.content)["rows"]] == [
        list(row) for row in json.loads(expected)["rows"]
    ]
    # DRF escapes the JavaScript line terminators; so does this, in items and everywhere else.
    assert "\u2028".encode() not in response.content and "\u2029".encode() not in response.content
    assert b"\\u2028" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
@pytest.mark.parametrize("microsecond", [0, 5, 123456])
def test_page_times_are_written_as_drf_wrote_them(api, monkeypatch, zone, microsecond):
    # In UTC orjson writes the stored datetime itself; elsewhere each is converted first. Either
    # way the text is DRF's: the offset spelt +HH:MM, microseconds only when there are any.
    agent = AgentFactory()
    at = dt.datetime(2026, 3, 29, 1, 30, 0, microsecond, tzinfo=dt.UTC)
    monkeypatch.setattr(timezone, "now", lambda: at)
    items = [{"item": {"type": "user_message", "text": str(n)}} for n in range(3)]
    assert api.post(f"/api/v1/agents/{agent.pk}/timeline", {"items": items}, format="json").status_code == 201
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        response = api.get(f"/api/v1/agents/{agent.pk}/timeline")
        expected = drf_page(read_timeline(agent_id=agent.pk))
    written = [row["committed_at"] for row in json.loads(response.content)["rows"]]
    assert written == [row["committed_at"] for row in json.loads(expected)["rows"]]
    assert written == [at.astimezone(zoneinfo.ZoneInfo(zone)).isoformat()] * 3


@pytest.mark.django_db
def test_append_answers_hold_what_drf_wrote(api):
    agent = AgentFactory()
    body = {
        "items": [
            {"item": {"type": "user_message", "text": "a"}, "item_id": "k1"},
            {"item": {"type": "user_message", "text": "b"}},
        ]
    }
    first = api.post(f"/api/v1/agents/{agent.pk}/timeline", body, format="json")
    again = api.post(f"/api/v1/agents/{agent.pk}/timeline", {"items": body["items"][:1]}, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert list(first.json()) == ["rows", "head_seq", "epoch"]
    assert [list(row) for row in first.json()["rows"]] == [["seq", "committed_at", "item_id"]] * 2
    rows = read_timeline(agent_id=agent.pk).rows
    expected = serializers.AppendResponseSerializer(
        {
            "rows": [{"seq": r["seq"], "committed_at": r["committed_at"], "item_id": r["item_id"]} for r in rows],
            "head_seq": 2,
            "epoch": agent.timeline_head.epoch,
        }
    ).data
    assert first.json() == json.loads(JSONRenderer().render(expected))
    assert again.json()["rows"] == first.json()["rows"][:1]
