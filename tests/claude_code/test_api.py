"""The Claude Code session endpoints through the API (auth, envelope, the SessionStore's calls)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from claude_code import selectors
from claude_code.keys import SessionKey
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

BASE = "/api/v1/claude-code"
KEY = {"project_key": "-srv-app", "session_id": "s1"}
SUB = {**KEY, "subpath": "subagents/agent-a1"}


def url(path: str, **query) -> str:
    return f"{BASE}/{path}?{urlencode(query)}"


def post_entries(api, key: dict, entries, **extra):
    return api.post(
        url("session/entries", **key), data=json.dumps({"entries": entries, **extra}), content_type="application/json"
    )


def test_append_load_list_subkeys_and_delete(api):
    entries = [{"type": "user", "uuid": "u1", "n": 1}, {"type": "custom-title", "customTitle": "t"}]
    appended = post_entries(api, KEY, entries)
    assert appended.status_code == 200, appended.content
    body = appended.json()
    assert body["appended"] == 2 and body["ignored"] == [] and body["mtime"] > 1e12
    assert body["summary"] is None and body["summary_version"] == 0
    again = post_entries(api, KEY, [entries[0]]).json()
    assert again["appended"] == 0 and again["ignored"] == [0]
    assert post_entries(api, SUB, [{"type": "assistant", "uuid": "s"}]).status_code == 200

    page = api.get(url("session/entries", **KEY)).json()
    assert page == {"entries": entries, "after": page["after"], "more": False}
    first = api.get(url("session/entries", **KEY, limit=1)).json()
    assert first["entries"] == entries[:1] and first["more"] is True
    rest = api.get(url("session/entries", **KEY, after=first["after"])).json()
    assert rest["entries"] == entries[1:] and rest["more"] is False

    listed = api.get(url("sessions", project_key=KEY["project_key"])).json()
    assert [s["session_id"] for s in listed["sessions"]] == ["s1"]
    assert api.get(url("session/subkeys", **KEY)).json() == {"subkeys": [SUB["subpath"]]}
    assert api.delete(url("session", **KEY)).json() == {"deleted": True}
    assert_error(api.get(url("session/entries", **SUB)), 404, "not_found")
    assert api.get(url("sessions", project_key=KEY["project_key"])).json() == {"sessions": []}
    assert api.delete(url("session", **KEY)).json() == {"deleted": False}


def test_summary_compare_and_swap(api):
    post_entries(api, KEY, [{"type": "user", "uuid": "u1"}])
    put = lambda data, version: api.put(  # noqa: E731
        url("session/summary", **KEY),
        data=json.dumps({"data": data, "expected_version": version}),
        content_type="application/json",
    )
    written = put({"custom_title": "a"}, 0)
    assert written.status_code == 200, written.content
    assert written.json()["version"] == 1 and written.json()["data"] == {"custom_title": "a"}
    stale = assert_error(put({"custom_title": "b"}, 0), 412, "version_mismatch")
    assert stale["version"] == 1
    summaries = api.get(url("summaries", project_key=KEY["project_key"])).json()["summaries"]
    assert summaries == [written.json()]
    follow = post_entries(api, KEY, [{"type": "user", "uuid": "u2"}]).json()
    assert follow["summary"] == written.json() and follow["summary_version"] == 1


@pytest.mark.parametrize(
    ("query", "body", "fields"),
    [
        (SUB | {"subpath": "/etc"}, {"entries": []}, ["subpath"]),
        (SUB | {"subpath": "a/../b"}, {"entries": []}, ["subpath"]),
        (KEY, {"entries": {"type": "x"}}, ["entries"]),
        (KEY, {"entries": ["line"]}, ["entries[0]"]),
        (KEY, {"entries": [{"type": "x", "uuid": 3}]}, ["entries[0].uuid"]),
        (KEY | {"namespace": "a b"}, {"entries": []}, ["namespace"]),
    ],
)
def test_bad_input_is_a_400_in_the_envelope_and_stores_nothing(api, query, body, fields):
    answer = api.post(url("session/entries", **query), data=json.dumps(body), content_type="application/json")
    error = assert_error(answer, 400, "invalid")
    assert any(any(f.startswith(name) for f in error["fields"]) for name in fields), error
    assert selectors.load_entries(SessionKey(KEY["project_key"], KEY["session_id"])) is None


def test_nul_and_oversized_lines_are_refused(api, settings):
    settings.CHARTR_MAX_ITEM_BYTES = 2048
    nul = api.post(
        url("session/entries", **KEY),
        data=b'{"entries": [{"type": "x", "t": "a\\u0000b"}]}',
        content_type="application/json",
    )
    assert nul.status_code == 400, nul.content
    big = post_entries(api, KEY, [{"type": "x", "uuid": "ok"}, {"type": "x", "text": "y" * 4096}])
    assert_error(big, 413, "payload_too_large")
    assert selectors.load_entries(SessionKey(KEY["project_key"], KEY["session_id"])) is None


def test_tokens_are_required_and_read_only_ones_cannot_write(anon, read_only_api):
    assert_error(anon.get(url("sessions", project_key="p")), 401, "not_authenticated")
    assert_error(post_entries(read_only_api, KEY, [{"type": "x"}]), 403, "permission_denied")
    assert read_only_api.get(url("sessions", project_key="p")).json() == {"sessions": []}


def test_transcript_lines_are_found_by_the_fleet_search(api):
    line = {"type": "assistant", "uuid": "a1", "message": {"content": [{"type": "text", "text": "the capybara naps"}]}}
    post_entries(api, KEY, [line, {"type": "user", "uuid": "u1", "message": {"content": "unrelated"}}])
    post_entries(api, SUB, [{"type": "user", "uuid": "s1", "message": {"content": "a capybara again"}}])
    found = api.get("/api/v1/search", {"q": "capybara"}).json()["results"]
    key, sub = SessionKey(KEY["project_key"], KEY["session_id"]), SessionKey(**SUB)
    assert sorted((r["agent_id"], r["match_count"]) for r in found) == sorted([(key.agent_id, 1), (sub.agent_id, 1)])
