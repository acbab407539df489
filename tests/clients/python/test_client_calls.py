"""The registry, agents and timeline calls against a live server, and their typed errors."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import httpx
import pytest
from chartr_client import Agent, AppendResult, NewItem, Project, TimelineRow, errors

REPO = Path(__file__).resolve().parents[3]


def test_projects_workspaces_and_agents_round_trip(client, workspace):
    project = client.get_project(workspace.project_id)
    assert isinstance(project, Project) and isinstance(project.created_at, dt.datetime)
    assert project.created_at.utcoffset() is not None
    assert [w.id for w in client.iter_workspaces(project_id=project.id)] == [workspace.id]

    agent = client.create_agent(workspace.id, "claude", agent_id="round-trip", title="first")
    assert isinstance(agent, Agent) and agent.workspace_id == workspace.id and agent.head_seq == 0
    assert client.get_agent("round-trip").title == "first"
    changed = client.update_agent("round-trip", {"title": "second"}, if_version=agent.version)
    assert changed.title == "second" and changed.version > agent.version
    with pytest.raises(errors.VersionMismatch) as stale:
        client.update_agent("round-trip", {"title": "third"}, if_version=agent.version)
    assert stale.value.version == changed.version and stale.value.status_code == 412
    client.heartbeat("round-trip")

    archived = client.archive_workspace(workspace.id)
    assert archived.record.archived_at is not None and archived.counts == {"agents": 1}
    assert client.get_agent("round-trip").archived_at is not None
    assert [a.agent_id for a in client.iter_agents(workspace_id=workspace.id)] == []
    assert [a.agent_id for a in client.iter_agents(workspace_id=workspace.id, archived="all")] == ["round-trip"]
    restored = client.unarchive_workspace(workspace.id)
    assert restored.record.archived_at is None and restored.counts == {"agents": 1}


def test_lists_follow_their_cursors(client, tmp_path):
    made = [client.create_project(f"/srv/pages/{tmp_path.name}/{n}", "directory").id for n in range(5)]
    first = client.list_projects(limit=2)
    assert len(first.results) == 2 and first.next_cursor is not None
    assert [p.id for p in client.iter_projects(limit=2)] == sorted(made)


def test_appends_and_reads(client, workspace):
    client.create_agent(workspace.id, "claude", agent_id="reader")
    result = client.append(
        "reader",
        [NewItem({"type": "user_message", "text": "hi"}, "m1"), {"type": "assistant_message", "text": "hello"}],
    )
    assert isinstance(result, AppendResult) and result.created
    assert [row.seq for row in result.rows] == [1, 2] and result.rows[0].item_id == "m1"
    assert result.rows[1].item_id  # the client gave the bare item an id
    again = client.append("reader", [NewItem({"type": "user_message", "text": "hi"}, "m1")])
    assert not again.created and again.rows[0].seq == 1 and again.head_seq == 2

    page = client.read_timeline("reader")
    assert page.epoch == result.epoch and page.window.max_seq == 2
    rows = [row for row in page.rows if isinstance(row, TimelineRow)]
    assert [(row.seq, row.item) for row in rows] == [
        (1, {"type": "user_message", "text": "hi"}),
        (2, {"type": "assistant_message", "text": "hello"}),
    ]
    assert [row.seq for row in client.iter_timeline("reader", limit=1)] == [1, 2]
    projected = client.read_timeline("reader", projection="projected").rows
    assert [(entry.seq_start, entry.seq_end) for entry in projected] == [(1, 1), (2, 2)]
    client.publish_provisional("reader", {"type": "assistant_message", "text": "…"}, item_id="m3")


def test_error_answers_are_typed(live, client, workspace):
    with pytest.raises(errors.NotFound) as missing:
        client.get_agent("nobody")
    assert missing.value.code == "not_found" and missing.value.status_code == 404
    with pytest.raises(errors.DuplicateDirectory):
        client.create_project(client.get_project(workspace.project_id).directory, "git")
    with pytest.raises(errors.Invalid) as invalid:
        client.create_project("relative/path", "git")
    assert "directory" in invalid.value.fields

    client.create_agent(workspace.id, "claude", agent_id="errors")
    client.append("errors", [NewItem({"type": "user_message", "text": "a"}, "a")])
    with pytest.raises(errors.ItemConflict) as conflict:
        client.append("errors", [NewItem({"type": "user_message", "text": "changed"}, "a")])
    assert (conflict.value.item_id, conflict.value.seq) == ("a", 1)
    with pytest.raises(errors.SeqConflict) as seq_conflict:
        client.append("errors", [{"type": "user_message", "text": "b"}], expected_head_seq=0)
    assert seq_conflict.value.head_seq == 1
    with pytest.raises(errors.IdempotencyKeyReused):
        client.create_project("/srv/key/one", "git", idempotency_key="k1")
        client.create_project("/srv/key/two", "git", idempotency_key="k1")

    with live.client(token="not-a-token") as stranger, pytest.raises(errors.NotAuthenticated):
        stranger.list_projects()
    with live.client(token=live.token_for("reader", "--read-only")) as reader:
        assert reader.get_agent("errors").head_seq == 1
        with pytest.raises(errors.PermissionDenied):
            reader.append("errors", [{"type": "user_message", "text": "no"}])


def test_every_error_code_of_the_schema_and_the_docs_has_its_own_class(live):
    """Each operation's error responses name their codes ("Code: `a`, `b`."), and docs/api.md's table
    lists every one (503's too): the client has a class for each, so none falls back to its status's."""
    schema = httpx.get(
        live.base_url + "/api/v1/schema", headers={"Authorization": f"Bearer {live.token}"}, timeout=30
    ).json()
    codes = set()
    for item in schema["paths"].values():
        for operation in item.values():
            for response in operation.get("responses", {}).values() if isinstance(operation, dict) else []:
                listed = re.search(r"Code: (.*)\.$", response.get("description", ""))
                codes.update(re.findall(r"`([a-z_]+)`", listed[1]) if listed else [])
    table = (REPO / "docs" / "api.md").read_text().split("## Errors", 1)[1].split("\n## ", 1)[0]
    documented = {
        code for row in re.findall(r"^\| \d{3} \| (.*?) \|", table, re.M) for code in re.findall(r"`(\w+)`", row)
    }
    assert {"not_found", "item_conflict", "version_mismatch"} <= codes, codes
    assert {"busy", "maintenance", "shutting_down", "asgi_required"} <= documented, documented
    assert (codes | documented) - set(errors.BY_CODE) == set()
    assert all(errors.BY_CODE[code].code_name == code for code in codes | documented)
