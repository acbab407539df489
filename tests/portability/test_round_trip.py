"""export_instance then import_instance into an emptied database: every API read is the same."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claude_code.models import ClaudeCodeSession
from legacy.models import ImportRun
from portability import services
from registry.models import Project
from snapshots.models import AgentSnapshot
from tests.portability.builders import build_instance
from tests.portability.reads import NOT_FOUND, every_read, failed
from tests.support.api import client_with
from timeline.models import TimelineHead, TimelineRow
from timeline.writes.counters import check_counters
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def _reads(raw_token: str) -> dict:
    client = client_with(raw_token)

    def get(path: str):
        response = client.get(path)
        return response.status_code, json.loads(response.content)

    return every_read(get)


def _empty_the_database() -> None:
    Project.objects.all().delete()  # workspaces, agents, heads and rows go with them (cascades)
    ApiToken.objects.all().delete()
    ImportRun.objects.all().delete()
    assert not AgentSnapshot.objects.exists() and not TimelineRow.objects.exists()


def test_an_instance_comes_back_as_it_was(tmp_path):
    raw = build_instance()
    before = _reads(raw)
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out), "--with-tokens")
    _empty_the_database()

    call_command("import_instance", str(out))

    assert _reads(raw) == before
    assert check_counters(repair=False) == []  # the carried counters are the rows' own
    again = tmp_path / "again.jsonl"
    call_command("export_instance", str(again), "--with-tokens")
    assert again.read_text().splitlines()[1:] == out.read_text().splitlines()[1:]
    # The lists, six reads of each of the 11 agents, one of each project and workspace and the Claude Code
    # reads, all answered but the summary and the load of the session only its subagent was appended to.
    assert len(before) > 80 and failed(before) == NOT_FOUND
    # The ids went on past the carried ones: a new project gets a fresh one.
    assert Project.objects.create(directory="/srv/new", display_name="n", kind="git").pk > max(
        p["id"] for p in before["/api/v1/projects?archived=all&limit=2"]
    )


def test_a_pruned_emptied_timeline_keeps_its_range_and_epoch(tmp_path):
    build_instance()
    kept = TimelineHead.objects.values("epoch", "min_seq", "head_seq", "committed_rows").get(pk="emptied:1")
    assert kept["min_seq"] == kept["head_seq"] + 1 > 1 and kept["committed_rows"] == 0
    out = tmp_path / "instance.jsonl.gz"
    call_command("export_instance", str(out))
    _empty_the_database()
    call_command("import_instance", str(out))
    assert TimelineHead.objects.values("epoch", "min_seq", "head_seq", "committed_rows").get(pk="emptied:1") == kept
    carried = TimelineHead.objects.get(pk="carried")
    assert (carried.epoch, carried.min_seq, carried.head_seq) == ("paseo-epoch-uuid", 5, 9)
    assert list(TimelineRow.objects.filter(agent_id="carried").values_list("seq", flat=True)) == [5, 6, 9]


def test_tokens_stay_behind_unless_asked(tmp_path):
    build_instance()
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out))
    assert '"type":"api_token"' not in out.read_text()
    _empty_the_database()
    call_command("import_instance", str(out))
    assert not ApiToken.objects.exists()
    assert AgentSnapshot.objects.count() == 11


def test_a_non_empty_database_is_refused_and_left_alone(tmp_path):
    build_instance()
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out))
    rows = TimelineRow.objects.count()
    with pytest.raises(CommandError, match=r"not empty \(it holds projects, workspaces, agents, timeline rows"):
        call_command("import_instance", str(out))
    assert TimelineRow.objects.count() == rows


def test_a_dry_run_runs_the_whole_import_and_rolls_back(tmp_path, capsys):
    build_instance()
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out))
    _empty_the_database()
    call_command("import_instance", str(out), "--dry-run")
    printed = capsys.readouterr().out
    assert "content hash of each of 11 agent(s)" in printed and "rolled back" in printed
    assert not Project.objects.exists() and not AgentSnapshot.objects.exists()
    assert not ClaudeCodeSession.objects.exists()
    call_command("import_instance", str(out))  # and the real one still goes in after it
    assert AgentSnapshot.objects.count() == 11


def test_a_database_not_migrated_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    out = tmp_path / "instance.jsonl"
    out.write_text("not even read\n")

    # kernel.migrations.not_migrated asks `migrate --check` (tests/chartr/test_health.py, the importers' tests); here, its answer
    monkeypatch.setattr(services, "not_migrated", lambda: "1 migration(s) not applied")
    with pytest.raises(CommandError, match=r"not migrated \(1 migration\(s\) not applied\); run manage.py migrate"):
        call_command("import_instance", str(out))


def test_an_updated_row_moves_with_its_earlier_versions_and_its_update_numbers(tmp_path):
    from timeline.models import TimelineRowRevision
    from timeline.writes.revisions import RowContent, update_row

    build_instance()
    row = TimelineRow.objects.filter(agent_id="carried").order_by("seq").first()
    first = row.item
    update_row(agent_id="carried", seq=row.seq, content=RowContent(item={"type": "user_message", "text": "v2"}))
    update_row(
        agent_id="carried",
        seq=row.seq,
        content=RowContent(item={"type": "user_message", "text": "v3"}, turn_id="t-9", revert_token=None),
    )

    def held():
        return (
            list(TimelineRow.objects.filter(agent_id="carried").values_list("seq", "revision", "update_seq", "item")),
            list(
                TimelineRowRevision.objects.filter(agent_id="carried")
                .order_by("revision")
                .values_list("row__seq", "revision", "update_seq", "item", "turn_id", "revert_token", "replaced_at")
            ),
            TimelineHead.objects.get(pk="carried").update_seq,
        )

    before = held()
    assert before[0][0][1:] == (3, 2, {"type": "user_message", "text": "v3"})
    assert [version[3] for version in before[1]] == [first, {"type": "user_message", "text": "v2"}]
    assert before[2] == 2
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out))
    kinds = [json.loads(line)["type"] for line in out.read_text().splitlines()[1:]]
    assert kinds.count("row_revision") == 2
    _empty_the_database()
    call_command("import_instance", str(out))  # its content hashes cover the earlier versions too
    assert held() == before
    # A row revised there keeps being revised here: the next update is revision 4, update 3.
    update = update_row(
        agent_id="carried", seq=row.seq, content=RowContent(item={"type": "user_message", "text": "v4"})
    )
    assert (update.row.revision, update.update_seq) == (4, 3)


def test_a_subagent_comes_back_under_its_parent_whatever_their_order_in_the_file(tmp_path):
    from registry.services import create_project, create_workspace
    from snapshots.services import create_agent

    project = create_project(directory="/srv/code/app", kind=Project.Kind.GIT)
    workspace = create_workspace(project=project, directory="/srv/code/app", kind="checkout")
    session = create_agent(workspace=workspace, agent_id="z-session", provider="claude-code", lifecycle="idle")
    # The export writes agents by id: this child comes before its parent.
    create_agent(workspace=workspace, agent_id="a-subagent", provider="claude-code", lifecycle="idle", parent=session)
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out))
    agents = [json.loads(line) for line in out.read_text().splitlines() if '"type":"agent"' in line.replace(" ", "")]
    assert [(a["agent_id"], a["parent"]) for a in agents] == [("a-subagent", "z-session"), ("z-session", None)]
    _empty_the_database()

    call_command("import_instance", str(out))

    assert AgentSnapshot.objects.get(pk="a-subagent").parent_id == "z-session"
    AgentSnapshot.objects.filter(pk="z-session").delete()
    assert not AgentSnapshot.objects.exists()  # the database's cascade took the subagent along


def test_claude_code_sessions_load_and_keep_their_summaries_after_the_move(tmp_path):
    raw = build_instance()
    client = client_with(raw)
    key = "project_key=-srv-code-app&session_id=s1"
    columns = [f.attname for f in ClaudeCodeSession._meta.concrete_fields]
    held = list(ClaudeCodeSession.objects.order_by("pk").values_list(*columns))
    summaries = client.get("/api/v1/claude-code/summaries?project_key=-srv-code-app").json()
    assert [(s["session_id"], s["version"], s["data"]["turns"]) for s in summaries["summaries"]] == [("s1", 2, 2)]
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out), "--with-tokens")
    _empty_the_database()
    assert not ClaudeCodeSession.objects.exists()

    call_command("import_instance", str(out))

    assert list(ClaudeCodeSession.objects.order_by("pk").values_list(*columns)) == held
    assert client.get("/api/v1/claude-code/summaries?project_key=-srv-code-app").json() == summaries
    loaded = client.get(f"/api/v1/claude-code/session/entries?{key}")
    assert loaded.status_code == 200 and [e["type"] for e in loaded.json()["entries"]] == ["user", "custom-title"]
    # The summary's compare-and-swap goes on from the carried version; a new session gets a fresh id.
    appended = client.post(
        f"/api/v1/claude-code/session/entries?{key}",
        data=json.dumps({"entries": [{"type": "user", "uuid": "u2"}], "summary": {"turns": 3}, "summary_version": 2}),
        content_type="application/json",
    ).json()
    assert appended["summary_written"] is True and appended["summary_version"] == 3
    client.post(
        "/api/v1/claude-code/session/entries?project_key=-srv-code-app&session_id=s3",
        data=json.dumps({"entries": [{"type": "user", "uuid": "n"}]}),
        content_type="application/json",
    )
    assert ClaudeCodeSession.objects.get(session_id="s3").pk > max(row[0] for row in held)
