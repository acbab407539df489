"""kernel/api/lean.py: the timeline's two endpoints answer every request exactly as plain DRF does.

Each request goes through the API's WSGI handler twice: once as served (``LeanApiView``'s
shortcuts on), once with ``AgentTimelineView`` deriving from DRF's ``APIView`` directly
(``plain_drf``). Status, every header and the body must be the same bytes. A request
that writes is rolled back after each side, and the clock is fixed, so both sides see the same
database and stamp the same ``committed_at``.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.wsgi import get_wsgi_application
from django.db import transaction
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.views import APIView

from kernel.api.lean import LeanApiView
from snapshots.services import archive_agent
from tests.factories import AgentFactory
from tests.support.api import wsgi_answer
from timeline.services import NewTimelineItem, append_timeline_items
from timeline.views import AgentTimelineView
from tokens.services import create_api_token, revoke_api_token

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("wsgi_keeps_test_connection")]

FIXED_NOW = dt.datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
TIMELINE = "/api/v1/agents/same/timeline"


@pytest.fixture
def plain_drf():
    """A switch: inside ``with plain_drf():`` the timeline's view derives from DRF's ``APIView``
    itself, so nothing ``LeanApiView`` overrides, now or later, takes part."""

    class Switch:
        def __enter__(self):
            AgentTimelineView.__bases__ = (APIView,)

        def __exit__(self, *exc):
            AgentTimelineView.__bases__ = (LeanApiView,)

    assert AgentTimelineView.__bases__ == (LeanApiView,)
    yield Switch
    AgentTimelineView.__bases__ = (LeanApiView,)


@pytest.fixture
def tokens(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: FIXED_NOW)
    writer = create_api_token(name="writer")[1]
    reader = create_api_token(name="reader", read_only=True)[1]
    revoked_token, revoked = create_api_token(name="revoked")
    revoke_api_token(token=revoked_token)
    return {"writer": writer, "reader": reader, "revoked": revoked}


@pytest.fixture
def timelines(tokens):
    AgentFactory(agent_id="same")
    gone = AgentFactory(agent_id="gone")
    items = [NewTimelineItem(item={"type": "user_message", "text": f"m{n}"}, item_id=f"id{n}") for n in range(5)]
    append_timeline_items(agent_id="same", items=items)
    append_timeline_items(agent_id="gone", items=items[:1])
    archive_agent(agent=gone)


def body(document) -> bytes:
    return json.dumps(document).encode()


def one_item(**extra) -> bytes:
    return body({"items": [{"item": {"type": "user_message", "text": "hi"}, **extra}]})


def reads(bearer: dict) -> list[tuple]:
    queries = [
        "",
        "limit=100",
        "limit=2",
        "direction=after&seq=0",
        "direction=after&seq=3&limit=1",
        "direction=before&seq=4",
        "direction=tail&projection=projected",
        "epoch=nope",
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=1&limit=2",
        "seq=-1&direction=after",
        "seq=99999999999999999999&direction=after",
        "direction=sideways",
        "direction=after",
        "unknown=1",
        "format=json",
        "format=api",
        "epoch=%00",
        "limit=%201",
    ]
    cases = [("GET", TIMELINE, {"query": query, "headers": bearer}) for query in queries]
    cases += [
        ("GET", "/api/v1/agents/missing/timeline", {"headers": bearer}),
        ("GET", "/api/v1/agents/gone/timeline", {"headers": bearer}),
        ("HEAD", TIMELINE, {"headers": bearer}),
        ("OPTIONS", TIMELINE, {"headers": bearer}),
        ("DELETE", TIMELINE, {"headers": bearer}),
        ("PUT", TIMELINE, {"body": one_item(), "headers": bearer}),
        ("PATCH", TIMELINE, {"body": one_item(), "headers": bearer}),
    ]
    return cases


def appends(bearer: dict) -> list[tuple]:
    item = {"type": "user_message", "text": "hi"}
    bodies = [
        one_item(),
        body({"items": [{"item": item}, {"item": {"type": "assistant_message", "text": "yo"}}]}),
        one_item(item_id="fresh"),
        body({"items": [{"item": {"type": "user_message", "text": "m0"}, "item_id": "id0"}]}),  # replay: 200
        one_item(item_id="id0"),  # the same id, another item: item_conflict
        body({"items": [{"item": item}], "expected_head_seq": 5}),
        body({"items": [{"item": item}], "expected_head_seq": 2}),  # stale: seq_conflict
        body({"items": [{"item": item}], "expected_head_seq": "5"}),
        body({"items": [{"item": item}], "expected_head_seq": -1}),
        body({"items": [{"item": item}], "expected_head_seq": True}),
        body({"items": [{"item": item}], "expected_head_seq": None}),
        body({"items": [{"item": item}], "extra": 1}),  # unknown key
        body({"items": [{"item": item, "colour": "red"}]}),  # unknown key in an item
        b'{"items": [], "items": []}',  # duplicate key
        b'{"items": [{"item": {"type": "user_message", "text": "a", "text": "b"}}]}',
        body({"items": []}),
        body({"items": {}}),
        body({"items": [item]}),
        body({"items": [{"item": "text"}]}),
        body({"items": [{"item": {"text": "no type"}}]}),
        body({"items": [{"item": item, "item_id": ""}]}),
        body({"items": [{"item": item, "item_id": 7}]}),
        body({"items": [{"item": item}] * 1001}),
        body([1, 2]),
        body({}),
        b'{"items": [{"item": {"type": "user_message", "text": "a\\u0000b"}}]}',
        b'{"items": [{"item": {"type": "user_message", "text": "\\ud800"}}]}',
        b'{"items": [{"item": {"type": "user_message", "n": NaN}}]}',
        b'{"items": [{"item": {"type": "user_message", "n": 1e999}}]}',
        b'{"items": [{"item": {"type": "user_message", "deep": ' + b"[" * 70 + b"]" * 70 + b"}}]}",
        b'{"items": ',
        b"not json",
        b"\xff\xfe",
        "\ufeff".encode() + one_item(),
        b"null",
        one_item(padding="x" * 5000),  # past the test's body limit: 413
    ]
    cases = [("POST", TIMELINE, {"body": data, "headers": bearer}) for data in bodies]
    content_types = ["application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", ""]
    cases += [("POST", TIMELINE, {"body": one_item(), "headers": bearer, "content_type": ct}) for ct in content_types]
    cases += [
        ("POST", TIMELINE, {"headers": bearer}),  # no body at all
        ("POST", TIMELINE, {"body": one_item(), "query": "format=json", "headers": bearer}),
        ("POST", TIMELINE, {"body": one_item(), "query": "limit=1", "headers": bearer}),
        ("POST", "/api/v1/agents/missing/timeline", {"body": one_item(), "headers": bearer}),
        ("POST", "/api/v1/agents/gone/timeline", {"body": one_item(), "headers": bearer}),
    ]
    return cases


def authentications(tokens: dict) -> list[tuple]:
    headers = [
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": f"Bearer {tokens['revoked']}"},
        {"Authorization": f"Token {tokens['writer']}"},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer {tokens['writer']} extra"},
        {"Authorization": "Bearer \u00e9t\u00e9"},
        {"Authorization": f"Bearer {tokens['reader']}"},
        {"Authorization": f"Bearer {tokens['writer']}", "Cookie": "sessionid=x"},
    ]
    cases = []
    for header in headers:
        cases.append(("GET", TIMELINE, {"headers": header}))
        cases.append(("POST", TIMELINE, {"body": one_item(), "headers": header}))
        cases.append(("POST", TIMELINE, {"body": b"{", "headers": header}))
    return cases


#: Negotiation decides the renderer and its media type, which an error's JSON is rendered with
#: (``indent``): each is tried on a success and a refusal of each method.
ACCEPTS = [
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/json;indent=2",
    "*/*; indent=3",
    "application/*",
    "text/html",
    "application/json, */*",
    "text/html;q=0.9, application/json",
    "",
    " */*",
]


def negotiations(bearer: dict) -> list[tuple]:
    cases = []
    for accept in ACCEPTS:
        headers = {**bearer, "Accept": accept}
        cases.append(("GET", TIMELINE, {"headers": headers}))
        cases.append(("GET", TIMELINE, {"query": "limit=0", "headers": headers}))
        cases.append(("POST", TIMELINE, {"body": one_item(), "headers": headers}))
        cases.append(("POST", TIMELINE, {"body": b"{", "headers": headers}))
    return cases


def every_request(tokens: dict) -> list[tuple]:
    bearer = {"Authorization": f"Bearer {tokens['writer']}"}
    return reads(bearer) + appends(bearer) + negotiations(bearer) + authentications(tokens)


def send(app, method: str, path: str, **options):
    """One request, its writes rolled back, so the other side starts from the same database."""
    with transaction.atomic():
        result = wsgi_answer(app, method, path, **options)
        transaction.set_rollback(True)
    return result


def test_every_request_is_answered_as_plain_drf_answers_it(tokens, timelines, plain_drf, settings):
    settings.CHARTR_MAX_BODY_BYTES = 4096
    # As in a process that has served the OpenAPI document: generating it instantiates the
    # views without a request, and nothing it leaves on a class may change an answer.
    SchemaGenerator().get_schema(request=None, public=True)
    app = get_wsgi_application()
    statuses = set()
    for method, path, options in every_request(tokens):
        lean = send(app, method, path, **options)
        with plain_drf():
            drf = send(app, method, path, **options)
        assert lean == drf, (method, path, options)
        statuses.add(lean[0].split()[0])
    # The cases reach every kind of answer the two endpoints give.
    assert statuses >= {"200", "201", "400", "401", "403", "404", "405", "406", "409", "413", "415"}, statuses


def test_the_shortcuts_take_the_plain_requests(tokens, timelines, monkeypatch):
    # The comparison above means something only if the lean side really takes its shortcuts.
    taken = []
    for name in ("perform_content_negotiation",):
        original = getattr(APIView, name)
        monkeypatch.setattr(APIView, name, lambda self, *a, _o=original, **k: taken.append(1) or _o(self, *a, **k))
    app = get_wsgi_application()
    bearer = {"Authorization": f"Bearer {tokens['writer']}"}
    assert send(app, "GET", TIMELINE, query="limit=100", headers=bearer)[0].startswith("200")
    assert send(app, "POST", TIMELINE, body=one_item(), headers=bearer)[0].startswith("201")
    assert taken == []
    assert send(app, "GET", TIMELINE, headers={**bearer, "Accept": "text/html"})[0].startswith("406")
    assert taken
