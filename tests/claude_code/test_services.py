"""The Claude Code session services and selectors, on the test database (SQLite or PostgreSQL)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError

from claude_code import selectors, services
from claude_code.keys import DEFAULT_NAMESPACE, SessionKey, agent_id_for
from claude_code.models import ClaudeCodeSession
from kernel.errors import NotFound, VersionMismatch
from registry.models import Workspace
from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db

KEY = SessionKey(project_key="-srv-app", session_id="s1")
SUB = SessionKey(project_key="-srv-app", session_id="s1", subpath="subagents/agent-a1")


def entry(uuid: str | None = None, **fields) -> dict:
    return {"type": "user", **({"uuid": uuid} if uuid else {}), **fields}


def test_entries_come_back_in_append_order_deep_equal():
    first = [entry("b", n=1, message={"content": [{"type": "text", "text": "hi"}]}), entry("a", n=2)]
    services.append_entries(KEY, first)
    services.append_entries(KEY, [{"type": "summary", "summary": "t", "leafUuid": "a"}])
    assert selectors.load_entries(KEY) == [*first, {"type": "summary", "summary": "t", "leafUuid": "a"}]
    rows = TimelineRow.objects.filter(agent_id=KEY.agent_id).order_by("seq")
    assert [row.item_type for row in rows] == ["claude_code.user", "claude_code.user", "claude_code.summary"]


def test_a_repeated_uuid_is_ignored_even_with_other_content_and_entries_without_uuid_repeat():
    services.append_entries(KEY, [entry("u1", n=1), entry(None, n=2)])
    outcome = services.append_entries(KEY, [entry("u1", n=99), entry(None, n=2), entry("u2"), entry("u2", n=3)])
    assert outcome.appended == 2 and outcome.ignored == (0, 3)
    assert selectors.load_entries(KEY) == [entry("u1", n=1), entry(None, n=2), entry(None, n=2), entry("u2")]


def test_unknown_keys_load_none_and_an_empty_append_creates_nothing():
    assert selectors.load_entries(KEY) is None
    outcome = services.append_entries(KEY, [])
    assert outcome.session is None and not ClaudeCodeSession.objects.exists()
    services.append_entries(KEY, [entry("x")])
    assert selectors.load_entries(SessionKey(KEY.project_key, KEY.session_id, "nope")) is None


def test_a_subagent_is_a_child_agent_and_deleting_the_session_deletes_it():
    services.append_entries(SUB, [entry("s")])  # before its session: the session is made, unlisted
    assert selectors.load_entries(KEY) is None and selectors.list_sessions(DEFAULT_NAMESPACE, KEY.project_key) == []
    services.append_entries(KEY, [entry("m", cwd="/srv/app/src")])
    sub_agent = AgentSnapshot.objects.get(pk=SUB.agent_id)
    assert sub_agent.parent_id == KEY.agent_id
    assert selectors.list_subkeys(DEFAULT_NAMESPACE, KEY.project_key, KEY.session_id) == [SUB.subpath]
    assert [s.session_id for s in selectors.list_sessions(DEFAULT_NAMESPACE, KEY.project_key)] == ["s1"]
    assert services.delete_session(KEY) is True
    assert not AgentSnapshot.objects.filter(pk__in=[KEY.agent_id, SUB.agent_id]).exists()
    assert not ClaudeCodeSession.objects.exists() and not TimelineRow.objects.exists()
    assert services.delete_session(KEY) is False


def test_deleting_a_subkey_leaves_the_rest():
    other = SessionKey(KEY.project_key, KEY.session_id, "subagents/agent-a2")
    for key in (KEY, SUB, other):
        services.append_entries(key, [entry("e")])
    services.delete_session(SUB)
    assert selectors.load_entries(SUB) is None
    assert selectors.load_entries(other) == [entry("e")] and selectors.load_entries(KEY) == [entry("e")]
    assert selectors.list_subkeys(DEFAULT_NAMESPACE, KEY.project_key, KEY.session_id) == [other.subpath]


def test_namespaces_and_project_keys_keep_sessions_apart():
    tenant = SessionKey(KEY.project_key, KEY.session_id, namespace="tenant-b")
    elsewhere = SessionKey("-other", KEY.session_id)
    services.append_entries(KEY, [entry("1", n=1)])
    services.append_entries(tenant, [entry("1", n=2)])
    services.append_entries(elsewhere, [entry("1", n=3)])
    assert len({agent_id_for(k) for k in (KEY, tenant, elsewhere)}) == 3
    assert [selectors.load_entries(k)[0]["n"] for k in (KEY, tenant, elsewhere)] == [1, 2, 3]
    assert [s.session_id for s in selectors.list_sessions("tenant-b", KEY.project_key)] == ["s1"]
    assert selectors.list_sessions("tenant-b", "-other") == []


def test_a_session_lands_in_its_cwd_workspace_or_the_holding_one():
    services.append_entries(KEY, [entry("a", cwd="/srv/app")])
    agent = AgentSnapshot.objects.select_related("workspace").get(pk=KEY.agent_id)
    assert agent.workspace.directory == "/srv/app" and agent.cwd == "/srv/app"
    services.append_entries(SUB, [entry("b", cwd="/srv/app")])
    assert AgentSnapshot.objects.get(pk=SUB.agent_id).workspace_id == agent.workspace_id
    no_cwd = SessionKey("-x", "s2")
    services.append_entries(no_cwd, [entry("c")])
    holding = AgentSnapshot.objects.get(pk=no_cwd.agent_id).workspace
    assert holding.directory == services.holding_directory(DEFAULT_NAMESPACE)
    assert Workspace.objects.count() == 2


def test_ensure_session_is_idempotent_and_finds_the_same_agent():
    first = services.ensure_session(KEY, cwd="/srv/app")
    again = services.ensure_session(KEY)
    assert first.pk == again.pk and again.agent_id == KEY.agent_id
    assert selectors.load_entries(KEY) is None  # made, not written


def test_summary_is_written_with_compare_and_swap():
    services.append_entries(KEY, [entry("a")])
    assert selectors.get_summary(KEY) is None
    written = services.write_summary(KEY, data={"custom_title": "one", "n": [1]}, expected_version=0)
    assert written.version == 1 and written.data == {"custom_title": "one", "n": [1]}
    mtime = selectors.list_sessions(DEFAULT_NAMESPACE, KEY.project_key)[0].mtime_ms
    assert written.mtime_ms >= mtime > 1e12
    with pytest.raises(VersionMismatch) as stale:
        services.write_summary(KEY, data={"lost": True}, expected_version=0)
    assert stale.value.extra == {"version": 1}
    assert selectors.list_summaries(DEFAULT_NAMESPACE, KEY.project_key) == [written]
    with pytest.raises(ValidationError):
        services.write_summary(SUB, data={}, expected_version=0)
    with pytest.raises(NotFound):
        services.write_summary(SessionKey("-x", "never"), data={}, expected_version=0)


@pytest.mark.parametrize(
    ("parts", "field"),
    [
        ({"subpath": "/abs"}, "subpath"),
        ({"subpath": "a/../b"}, "subpath"),
        ({"subpath": "a//b"}, "subpath"),
        ({"session_id": ""}, "session_id"),
        ({"project_key": "a\x00b"}, "project_key"),
        ({"namespace": "has space"}, "namespace"),
    ],
)
def test_bad_keys_are_refused_naming_the_part(parts, field):
    with pytest.raises(ValidationError) as refused:
        SessionKey.checked(**{"project_key": "p", "session_id": "s", **parts})
    assert field in refused.value.message_dict


def test_bad_entries_store_nothing():
    with pytest.raises(ValidationError) as refused:
        services.append_entries(KEY, [entry("a"), "not an object", {"type": "x", "uuid": 5}])
    assert set(refused.value.message_dict) == {"entries[1]", "entries[2].uuid"}
    with pytest.raises(ValidationError):
        services.append_entries(KEY, [entry("a"), {"type": "x", "text": "nul \x00"}])
    assert not ClaudeCodeSession.objects.exists() and not TimelineRow.objects.exists()


def test_a_session_without_cwd_moves_with_its_subagents_when_one_arrives():
    services.append_entries(KEY, [{"type": "summary", "summary": "t", "leafUuid": "x"}])
    services.append_entries(SUB, [entry("s")])
    holding = AgentSnapshot.objects.get(pk=KEY.agent_id).workspace_id
    assert AgentSnapshot.objects.get(pk=SUB.agent_id).workspace_id == holding
    services.append_entries(KEY, [entry("u", cwd="/srv/app/src")])
    session, sub = (AgentSnapshot.objects.select_related("workspace").get(pk=k.agent_id) for k in (KEY, SUB))
    assert session.workspace.directory == "/srv/app/src" and session.cwd == "/srv/app/src"
    assert sub.workspace_id == session.workspace_id
    version = session.version
    services.append_entries(KEY, [entry("v", cwd="/elsewhere")])  # placed once: a later cwd moves nothing
    assert AgentSnapshot.objects.get(pk=KEY.agent_id).version == version


def test_a_summary_sent_with_the_entries_is_written_only_over_its_version_and_with_nothing_ignored():
    services.append_entries(KEY, [entry("a")])
    services.write_summary(KEY, data={"n": 1}, expected_version=0)
    along = services.append_entries(KEY, [entry("b")], summary={"n": 2}, summary_version=1)
    assert along.summary_written and selectors.get_summary(KEY).data == {"n": 2}
    stale = services.append_entries(KEY, [entry("c")], summary={"n": 3}, summary_version=1)
    assert stale.appended == 1 and not stale.summary_written and selectors.get_summary(KEY).version == 2
    repeated = services.append_entries(KEY, [entry("c"), entry("d")], summary={"n": 4}, summary_version=2)
    assert repeated.ignored == (0,) and not repeated.summary_written and selectors.get_summary(KEY).data == {"n": 2}
    with pytest.raises(ValidationError):
        services.append_entries(SUB, [entry("e")], summary={}, summary_version=0)


def _carried(**fields) -> ClaudeCodeSession:
    """The main session of ``KEY`` as an instance export holds it, its agent already imported."""
    values = {
        "id": 41,
        "namespace": DEFAULT_NAMESPACE,
        "project_key": KEY.project_key,
        "session_id": KEY.session_id,
        "subpath": "",
        "agent_id": KEY.agent_id,
        "mtime_ms": 1_700_000_000_000,
        "summary": {"title": "carried"},
        "summary_version": 5,
        "summary_mtime_ms": 1_700_000_000_500,
        "created_at": dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
        **fields,
    }
    return ClaudeCodeSession(**values)


def test_a_carried_session_keeps_its_id_times_and_summary_and_is_found_by_its_key():
    services.ensure_session(KEY)  # its agent, as the import brings it before the session
    ClaudeCodeSession.objects.all().delete()
    services.carry_over_sessions(sessions=[_carried()])
    stored = ClaudeCodeSession.objects.get()
    assert (stored.pk, stored.mtime_ms, stored.summary_version) == (41, 1_700_000_000_000, 5)
    assert stored.created_at == dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
    assert selectors.get_summary(KEY) == selectors.Summary("s1", 1_700_000_000_500, {"title": "carried"}, 5)
    written = services.write_summary(KEY, data={"title": "next"}, expected_version=5)
    assert written.version == 6
    other = services.ensure_session(SessionKey(project_key="-srv-app", session_id="s2"))
    assert other.pk > 41  # the id sequence moved past the carried one


def test_a_carried_session_with_a_key_the_api_refuses_is_refused_naming_the_part():
    services.ensure_session(KEY)
    ClaudeCodeSession.objects.all().delete()
    with pytest.raises(ValidationError) as refused:
        services.carry_over_sessions(sessions=[_carried(subpath="../up")])
    assert "subpath" in refused.value.message_dict
    assert not ClaudeCodeSession.objects.exists()
