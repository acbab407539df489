"""The timeline's OpenAPI: typed items built from the rules the server enforces, and the described stream."""

from __future__ import annotations

import re

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.api import stream_path
from timeline.api.schema import item_component_name
from timeline.items import KNOWN_ITEM_TYPES, TOOL_CALL_STATUSES, item_problems

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(api) -> dict:
    return api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()


def schema_for(document: dict, name: str) -> dict:
    return document["components"]["schemas"][name]


def test_the_append_body_names_every_known_item_type_and_its_required_fields(document):
    new_item = schema_for(document, "NewItemRequest")
    assert new_item["required"] == ["item"]
    assert new_item["properties"]["item"]["allOf"] == [{"$ref": "#/components/schemas/TimelineItem"}]
    append = schema_for(document, "AppendRequestRequest")
    assert append["properties"]["items"]["minItems"] == 1

    item = schema_for(document, "TimelineItem")
    names = [ref["$ref"].rsplit("/", 1)[1] for ref in item["oneOf"]]
    assert names == [*(item_component_name(t) for t in KNOWN_ITEM_TYPES), "OtherItem"]
    for item_type, fields in KNOWN_ITEM_TYPES.items():
        component = schema_for(document, item_component_name(item_type))
        assert component["properties"]["type"]["const"] == item_type
        assert component["required"] == ["type", *fields]
    tool_call = schema_for(document, "ToolCallItem")
    assert tool_call["required"] == ["type", "callId", "name", "status"]
    assert tool_call["properties"]["status"]["enum"] == list(TOOL_CALL_STATUSES)
    other = schema_for(document, "OtherItem")["properties"]["type"]
    assert other["not"] == {"enum": list(KNOWN_ITEM_TYPES)}


def test_reads_carry_typed_items_and_separate_row_shapes(document):
    canonical = schema_for(document, "CanonicalRow")
    assert set(canonical["required"]) == {
        "seq",
        "committed_at",
        "item_type",
        "item",
        "item_id",
        "turn_id",
        "provider_message_id",
        "provider_timeline_item_id",
        "extra",
        "revision",
    }
    # Left out when the row has none, so a null token and none stay apart.
    assert "revert_token" in canonical["properties"]
    projected = schema_for(document, "ProjectedEntry")
    assert set(projected["required"]) == {
        "seq_start",
        "seq_end",
        "source_seq_ranges",
        "committed_at",
        "item_type",
        "item",
        "item_ids",
        "turn_id",
        "collapsed",
    }
    for shape in (canonical, projected):
        assert shape["properties"]["item"] == {"$ref": "#/components/schemas/TimelineItem"}
    rows = schema_for(document, "TimelinePage")["properties"]["rows"]["items"]
    assert schema_for(document, rows["$ref"].rsplit("/", 1)[1])["oneOf"] == [
        {"$ref": "#/components/schemas/CanonicalRow"},
        {"$ref": "#/components/schemas/ProjectedEntry"},
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=5,
)
field_names = sorted({field for fields in KNOWN_ITEM_TYPES.values() for field in fields})
item_types = st.sampled_from([*KNOWN_ITEM_TYPES, "", "custom_kind", "x" * 65]) | json_values
candidate_items = (
    st.builds(
        lambda item_type, fields: {"type": item_type, **fields},
        item_types,
        st.dictionaries(st.sampled_from(field_names), json_values | st.sampled_from(TOOL_CALL_STATUSES)),
    )
    | json_values
)


def test_the_schema_accepts_exactly_the_items_the_server_accepts(document):
    validator = jsonschema.Draft202012Validator(
        {"components": document["components"], "$ref": "#/components/schemas/TimelineItem"}
    )

    @settings(max_examples=400, deadline=None, derandomize=True, database=None)
    @given(candidate_items)
    def agree(item):
        assert validator.is_valid(item) == (item_problems(item) == []), item

    agree()


def test_the_stream_names_its_five_events_with_their_data_and_ids(document):
    content = document["paths"][stream_path()]["get"]["responses"]["200"]["content"]
    assert content["text/event-stream"]["schema"] == {"$ref": "#/components/schemas/TimelineStreamEvent"}
    events = {
        ref["$ref"].rsplit("/", 1)[1]: schema_for(document, ref["$ref"].rsplit("/", 1)[1])
        for ref in schema_for(document, "TimelineStreamEvent")["oneOf"]
    }
    names = {name: event["properties"]["event"]["const"] for name, event in events.items()}
    assert names == {
        "CommittedEvent": "committed",
        "ProvisionalEvent": "provisional",
        "UpdatedEvent": "updated",
        "AgentEvent": "agent",
        "ResetEvent": "reset",
    }
    id_required = {name: "id" in event["required"] for name, event in events.items()}
    assert id_required == {
        "CommittedEvent": True,
        "ProvisionalEvent": False,
        "UpdatedEvent": True,
        "AgentEvent": False,
        "ResetEvent": True,
    }
    for event in events.values():
        assert event["properties"]["data"]["contentMediaType"] == "application/json"
    committed_data = events["CommittedEvent"]["properties"]["data"]["contentSchema"]
    assert committed_data == {"$ref": "#/components/schemas/CanonicalRow"}


def test_the_documented_stream_path_is_the_routed_one():
    assert stream_path() == "/api/v1/agents/{agent_id}/timeline/stream"


def test_the_stream_takes_a_token_or_a_ticket_and_the_ticket_endpoint_is_documented(document):
    stream = document["paths"][stream_path()]["get"]
    assert stream["security"] == [{"bearerAuth": []}, {"streamTicket": []}]
    assert document["components"]["securitySchemes"]["streamTicket"] | {"description": ""} == {
        "type": "apiKey",
        "in": "query",
        "name": "ticket",
        "description": "",
    }
    assert "stream_ticket_invalid" in stream["responses"]["401"]["description"]
    assert "stream_ticket_other_agent" in stream["responses"]["403"]["description"]
    mint = document["paths"][stream_path() + "-tickets"]["post"]
    assert mint["operationId"] == "timeline_stream_ticket" and "requestBody" not in mint
    created = mint["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert sorted(schema_for(document, created)["required"]) == [
        "agent_id",
        "expires_at",
        "expires_in",
        "stream_url",
        "ticket",
    ]


def test_the_row_update_and_the_streams_updates_are_documented(document):
    operation = document["paths"]["/api/v1/agents/{agent_id}/timeline/rows/{seq}"]["put"]
    assert operation["operationId"] == "timeline_row_update"
    assert {"200", "400", "404", "409", "413", "415"} <= set(operation["responses"])
    assert "row_not_found" in operation["responses"]["404"]["description"]
    body = schema_for(document, "RowUpdateRequestRequest")
    assert body["required"] == ["item"] and body["additionalProperties"] is False
    assert "revert_token" in body["properties"]
    stream = document["paths"][stream_path()]["get"]
    parameters = {parameter["name"]: parameter for parameter in stream["parameters"]}
    assert parameters["updates"]["schema"]["enum"] == ["0", "1"]
    pattern = parameters["Last-Event-ID"]["schema"]["pattern"]
    updated = schema_for(document, "UpdatedEvent")
    assert updated["properties"]["event"]["const"] == "updated"
    assert updated["properties"]["id"]["pattern"] == pattern
    assert re.fullmatch(pattern, "12:3") and re.fullmatch(pattern, "12") and not re.fullmatch(pattern, "12:")


def test_the_streams_parameters_are_those_its_view_reads(document):
    """The stream's query parameters come from the Struct the view reads its query with, its header from the
    pattern it checks ``Last-Event-ID`` with: the document and the view cannot disagree on either."""
    import msgspec

    from timeline.live.openapi import LAST_EVENT_ID_PATTERN, StreamQuery

    stream = document["paths"][stream_path()]["get"]
    by_place = {}
    for parameter in stream["parameters"]:
        by_place.setdefault(parameter["in"], {})[parameter["name"]] = parameter
    assert list(by_place["query"]) == [field.encode_name for field in msgspec.structs.fields(StreamQuery)]
    assert by_place["query"]["after_seq"]["schema"] == {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
    assert all(parameter["allowEmptyValue"] for parameter in by_place["query"].values())
    assert by_place["header"]["Last-Event-ID"]["schema"]["pattern"] == LAST_EVENT_ID_PATTERN
    assert list(by_place["path"]) == ["agent_id"]
