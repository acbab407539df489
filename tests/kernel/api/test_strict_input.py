"""A typo never switches a safety feature off: unknown keys, duplicate keys, numbers
sent as strings and Python-only integer spellings are refused with 400 ``invalid``."""

from __future__ import annotations

import re

import pytest

from tests.factories import AgentFactory, ProjectFactory
from tests.support.api import assert_error
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db


def post_raw(api, path: str, body: str):
    return api.generic("POST", path, body, content_type="application/json")


def timeline(agent) -> str:
    return f"/api/v1/agents/{agent.pk}/timeline"


def test_an_unknown_key_on_an_item_is_refused_and_nothing_is_stored(api):
    agent = AgentFactory()
    body = '{"items": [{"item": {"type": "user_message", "text": "hi"}, "itemId": "x1"}]}'
    for _ in range(2):
        error = assert_error(post_raw(api, timeline(agent), body), 400, "invalid", fields=["items[0].itemId"])
    assert "itemId" in error["message"]
    assert TimelineRow.objects.filter(agent=agent).count() == 0


def test_a_misspelt_guard_is_refused_not_ignored(api):
    agent = AgentFactory()
    body = '{"items": [{"item": {"type": "user_message", "text": "hi"}}], "expectedHeadSeq": 0}'
    assert_error(post_raw(api, timeline(agent), body), 400, "invalid", fields=["expectedHeadSeq"])


def test_a_duplicate_key_cannot_turn_the_guard_off(api):
    agent = AgentFactory()
    body = (
        '{"items": [{"item": {"type": "user_message", "text": "hi"}}],'
        ' "expected_head_seq": 0, "expected_head_seq": null}'
    )
    assert_error(post_raw(api, timeline(agent), body), 400, "invalid", fields=["expected_head_seq"])
    assert TimelineRow.objects.filter(agent=agent).count() == 0


def test_a_duplicate_key_deep_inside_an_item_is_refused(api):
    agent = AgentFactory()
    body = '{"items": [{"item": {"type": "user_message", "text": "a", "text": "b"}}]}'
    assert_error(post_raw(api, timeline(agent), body), 400, "invalid", fields=["text"])


def test_duplicate_keys_are_refused_on_the_registry_endpoints_too(api):
    body = '{"directory": "/srv/a", "kind": "git", "kind": "plain"}'
    assert_error(post_raw(api, "/api/v1/projects", body), 400, "invalid", fields=["kind"])


def test_a_number_sent_as_a_string_is_refused(api):
    agent = AgentFactory()
    body = '{"items": [{"item": {"type": "user_message", "text": "hi"}}], "expected_head_seq": "0"}'
    assert_error(post_raw(api, timeline(agent), body), 400, "invalid", fields=["expected_head_seq"])


@pytest.mark.parametrize("spelling", ["1_0", "+1", " 1", "١"])
def test_python_only_integer_spellings_are_refused_in_queries(api, spelling):
    agent = AgentFactory()
    response = api.get(timeline(agent), {"direction": "after", "seq": spelling})
    assert_error(response, 400, "invalid", fields=["seq"])
    assert_error(api.get(timeline(agent), {"limit": spelling}), 400, "invalid", fields=["limit"])
    assert_error(api.get("/api/v1/agents", {"workspace_id": spelling}), 400, "invalid", fields=["workspace_id"])


def test_an_unknown_read_parameter_is_refused(api):
    agent = AgentFactory()
    assert_error(api.get(timeline(agent), {"sq": "5"}), 400, "invalid", fields=["sq"])


def test_an_action_without_a_body_refuses_one_with_keys(api):
    project = ProjectFactory()
    response = api.post(f"/api/v1/projects/{project.pk}/archive", {"cascade": False}, format="json")
    assert_error(response, 400, "invalid", fields=["cascade"])
    project.refresh_from_db()
    assert project.archived_at is None
    assert api.post(f"/api/v1/projects/{project.pk}/archive", {}, format="json").status_code == 200
    assert api.post(f"/api/v1/projects/{project.pk}/unarchive").status_code == 200


def test_a_provisional_update_refuses_unknown_keys_too(api):
    agent = AgentFactory()
    body = '{"item": {"type": "user_message", "text": "hi"}, "itemId": "x1"}'
    assert_error(post_raw(api, f"{timeline(agent)}/provisional", body), 400, "invalid", fields=["itemId"])


def test_an_integral_float_is_an_integer_as_json_schema_says(api):
    agent = AgentFactory()
    response = api.post(
        f"/api/v1/agents/{agent.pk}/timeline",
        {"items": [{"item": {"type": "note"}}], "expected_head_seq": 0.0},
        format="json",
    )
    assert response.status_code == 201, response.content
    response = api.post(
        f"/api/v1/agents/{agent.pk}/timeline",
        {"items": [{"item": {"type": "note"}}], "expected_head_seq": 0.5},
        format="json",
    )
    assert_error(response, 400, "invalid", fields=["expected_head_seq"])


def test_a_length_limit_counts_the_text_as_sent_not_as_trimmed(api):
    project = ProjectFactory()
    response = api.patch(f"/api/v1/projects/{project.pk}", {"display_name": " " + "x" * 255}, format="json")
    assert_error(response, 400, "invalid", fields=["display_name"])
    assert api.patch(f"/api/v1/projects/{project.pk}", {"display_name": "x" * 255}, format="json").status_code == 200


def test_whitespace_alone_is_refused_where_the_schema_says_so(api):
    project = ProjectFactory()
    response = api.patch(f"/api/v1/projects/{project.pk}", {"display_name": " \u3000\x1c"}, format="json")
    assert_error(response, 400, "invalid", fields=["display_name"])
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    pattern = schema["components"]["schemas"]["PatchedProjectUpdateRequest"]["properties"]["display_name"]["pattern"]
    assert re.search(pattern, " \u3000\x1c") is None and re.search(pattern, " a ") is not None
