"""kernel/api/plain.py, through the timeline's plain views: each refusal the lean path makes
itself, in the API's envelope, and msgspec's errors named by field."""

from __future__ import annotations

import json

import msgspec
import pytest

from kernel.api.plain import validation_fields
from tests.factories import AgentFactory
from tests.support.api import assert_error
from timeline.api.shapes import AppendRequest
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db

ONE_ITEM = json.dumps({"items": [{"item": {"type": "user_message", "text": "hi"}}]})


def timeline(agent) -> str:
    return f"/api/v1/agents/{agent.pk}/timeline"


def test_an_unsupported_method_is_405_naming_the_allowed_ones(api):
    agent = AgentFactory()
    response = api.patch(timeline(agent), ONE_ITEM, content_type="application/json")
    assert_error(response, 405, "method_not_allowed")
    assert response["Allow"] == "DELETE, GET, HEAD, OPTIONS, POST, PUT"
    assert_error(
        api.put(f"{timeline(agent)}/provisional", ONE_ITEM, content_type="application/json"), 405, "method_not_allowed"
    )


def test_options_names_the_methods_and_head_is_get(api):
    agent = AgentFactory()
    options = api.options(timeline(agent))
    assert options.status_code == 200 and options["Allow"] == "DELETE, GET, HEAD, OPTIONS, POST, PUT"
    assert api.head(timeline(agent)).status_code == 200


@pytest.mark.parametrize("accept", ["", "*/*", "application/json", "application/*", "text/html, application/json"])
def test_any_accept_admitting_json_gets_json(api, accept):
    response = api.get(timeline(AgentFactory()), HTTP_ACCEPT=accept)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"


def test_an_accept_without_json_is_406(api):
    assert_error(api.get(timeline(AgentFactory()), HTTP_ACCEPT="text/html"), 406, "not_acceptable")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_a_body_that_is_not_json_is_415_and_stores_nothing(api, content_type):
    agent = AgentFactory()
    assert_error(
        api.generic("POST", timeline(agent), ONE_ITEM, content_type=content_type), 415, "unsupported_media_type"
    )
    assert not TimelineRow.objects.filter(agent=agent).exists()


def test_json_with_a_charset_is_json(api):
    agent = AgentFactory()
    response = api.generic("POST", timeline(agent), ONE_ITEM, content_type="application/json; charset=utf-8")
    assert response.status_code == 201, response.content


def test_a_body_past_the_limit_is_413(api, settings):
    settings.CHARTR_MAX_BODY_BYTES = 100
    body = json.dumps({"items": [{"item": {"type": "user_message", "text": "x" * 200}}]})
    assert_error(
        api.generic("POST", timeline(AgentFactory()), body, content_type="application/json"), 413, "payload_too_large"
    )


def test_msgspec_alone_keeps_the_last_of_duplicate_keys_so_the_strict_parser_refuses_them_first(api):
    # Why the body goes through kernel/api/parsers.py before msgspec sees it.
    raw = b'{"items": [{"item": {"type": "note"}}], "expected_head_seq": 0, "expected_head_seq": null}'
    assert msgspec.json.decode(raw, type=AppendRequest).expected_head_seq is None
    agent = AgentFactory()
    for path in (timeline(agent), f"{timeline(agent)}/provisional"):
        body = '{"item": {"type": "note", "n": 1, "n": 2}}' if path.endswith("provisional") else raw.decode()
        error = assert_error(api.generic("POST", path, body, content_type="application/json"), 400, "invalid")
        assert "Duplicate key" in error["message"]
    assert not TimelineRow.objects.filter(agent=agent).exists()


def test_a_parameter_given_twice_is_refused(api):
    response = api.get(timeline(AgentFactory()) + "?limit=1&limit=2")
    assert_error(response, 400, "invalid", fields=["limit"])


def test_an_empty_parameter_is_not_given(api):
    agent = AgentFactory()
    page = api.get(timeline(agent) + "?limit=&epoch=&seq=")
    assert page.status_code == 200, page.content
    assert page.json()["direction"] == "tail"


def test_the_throttle_answers_429_with_retry_after(api, settings):
    settings.CHARTR_API_THROTTLE_RATE = "1/m"
    agent = AgentFactory()
    assert api.get(timeline(agent)).status_code == 200
    response = api.get(timeline(agent))
    assert_error(response, 429, "throttled")
    assert int(response["Retry-After"]) >= 1


@pytest.mark.parametrize(
    "message, fields",
    [
        (
            "Object contains unknown field `itemId` - at `$.items[0]`",
            {"items[0].itemId": ["Object contains unknown field `itemId`"]},
        ),
        ("Object contains unknown field `x`", {"x": ["Object contains unknown field `x`"]}),
        ("Object missing required field `items`", {"items": ["Object missing required field `items`"]}),
        ("Expected `int` >= 0 - at `$.expected_head_seq`", {"expected_head_seq": ["Expected `int` >= 0"]}),
        ("Expected `object`, got `str` - at `$.items[1].item`", {"items[1].item": ["Expected `object`, got `str`"]}),
        ("Expected `object`, got `array`", {"non_field_errors": ["Expected `object`, got `array`"]}),
    ],
)
def test_msgspec_errors_are_named_by_field(message, fields):
    assert validation_fields(message) == fields
