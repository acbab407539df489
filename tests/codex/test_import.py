"""import_codex over a real-shaped Codex home: what it creates, and where."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from codex.models import CodexImportRun, CodexThread
from registry.models import Workspace
from snapshots.models import AgentSnapshot
from tests.codex.builders import ARCHIVED, FORK, LIVE, SEGMENTED, SEGMENTS_DIR, assistant, user
from tests.codex.conftest import dump_database, records, run
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db


def test_each_thread_is_an_agent_and_each_line_a_row_kept_whole(home):
    output = run("import_codex", home.root)
    files = home.files()
    agents = {agent.agent_id: agent for agent in AgentSnapshot.objects.all()}
    assert set(agents) == {LIVE, ARCHIVED, FORK, SEGMENTED}
    assert {agent.provider for agent in agents.values()} == {"codex"}
    live = next(lines for path, lines in files.items() if LIVE in path)
    assert records(LIVE) == live
    types = TimelineRow.objects.filter(agent_id=LIVE).order_by("seq").values_list("item_type", flat=True)
    assert list(types) == [f"codex.{line['type']}" for line in live]
    assert "threads:   4 created" in output
    # Not a terminal: one line per phase, no carriage returns.
    assert "reading rollouts...\nimporting threads...\n" in output and "\r" not in output
    assert f"  {LIVE}: {len(live)} new of {len(live)} lines" in output
    assert CodexImportRun.objects.count() == 1


def test_threads_are_placed_by_cwd_and_git_archived_and_forked(home):
    run("import_codex", home.root)
    agents = {agent.agent_id: agent for agent in AgentSnapshot.objects.select_related("workspace__project")}
    app = agents[LIVE].workspace
    assert app.directory == "/home/me/app"
    assert (app.branch, app.project.git_remote) == ("main", "git@github.com:me/app.git")
    # A cwd below a workspace belongs to it: the legacy importer's rule.
    assert agents[SEGMENTED].workspace == app
    assert agents[SEGMENTED].cwd == "/home/me/app/lib"
    assert agents[ARCHIVED].workspace.directory == "/home/me/notes"
    assert agents[ARCHIVED].is_archived and not agents[LIVE].is_archived
    assert agents[FORK].parent_id == LIVE
    assert agents[LIVE].parent_id is None
    assert Workspace.objects.count() == 2


def test_a_segmented_thread_is_its_sealed_lines_then_the_live_ones(home):
    output = run("import_codex", home.root)
    files = home.files()
    sealed = next(lines for path, lines in files.items() if path.startswith(SEGMENTS_DIR))
    live = next(lines for path, lines in files.items() if SEGMENTED in path and path.startswith("sessions/"))
    assert records(SEGMENTED) == sealed + live
    assert live[1]["type"] == "rollout_reference"
    state = CodexThread.objects.get(agent_id=SEGMENTED)
    assert [entry["path"].split("/")[0] for entry in state.files] == [SEGMENTS_DIR, "sessions"]
    # The sealed segments' directory is read; the files that are not threads are named, with why.
    assert SEGMENTS_DIR + ":" not in output
    assert "history.jsonl: the prompt history across threads" in output
    assert "state_5.sqlite: Codex's own state or log database" in output
    assert "config.toml: Codex's configuration" in output


def test_the_sessions_directory_or_one_rollout_file_imports_alone(home):
    run("import_codex", home.root / "sessions")
    assert set(AgentSnapshot.objects.values_list("agent_id", flat=True)) == {LIVE, FORK, SEGMENTED}
    # The segmented thread's sealed segment is outside sessions/, and still comes along.
    assert TimelineRow.objects.filter(agent_id=SEGMENTED).count() == 6
    archived = next((home.root / "archived_sessions").iterdir())
    run("import_codex", archived)
    assert AgentSnapshot.objects.get(pk=ARCHIVED).is_archived


def test_a_fork_whose_parent_is_unknown_is_imported_without_one(home):
    run("import_codex", next(home.root.rglob(f"*{FORK}.jsonl")))
    fork = AgentSnapshot.objects.get(pk=FORK)
    assert fork.parent_id is None
    assert CodexImportRun.objects.get().warnings == [
        f"sessions/2025/10/02/rollout-2025-10-02T09-00-00-{FORK}.jsonl: forked from thread {LIVE}, which is "
        "neither in this import nor in chartr; imported without a parent"
    ]


def test_a_dry_run_writes_nothing(home):
    before = dump_database()
    output = run("import_codex", home.root, "--dry-run")
    assert "dry run" in output
    assert dump_database() == before


def test_a_bad_line_names_its_file_and_line_and_nothing_is_written(home):
    before = dump_database()
    live = next(home.root.rglob(f"*{LIVE}.jsonl"))
    lines = live.read_text().splitlines()
    live.write_text("\n".join([*lines[:3], "{not json", *lines[3:]]) + "\n")
    with pytest.raises(CommandError) as caught:
        run("import_codex", home.root)
    assert f"sessions/2025/10/01/{live.name}:4: not JSON" in str(caught.value)
    assert dump_database() == before


def test_a_reference_to_a_missing_sealed_segment_is_a_hole_refused(home):
    sealed = next((home.root / SEGMENTS_DIR).rglob("*.jsonl"))
    sealed.unlink()
    with pytest.raises(CommandError) as caught:
        run("import_codex", home.root)
    assert ":2: refers to the sealed segment" in str(caught.value)
    assert not AgentSnapshot.objects.exists()


def test_an_agent_of_the_same_id_not_from_codex_is_left_alone(home):
    from tests.factories import AgentFactory

    AgentFactory(agent_id=LIVE, provider="claude")
    with pytest.raises(CommandError, match="was not imported from Codex"):
        run("import_codex", home.root)
    assert TimelineRow.objects.filter(agent_id=LIVE).count() == 0


def test_the_fixture_lines_carry_the_fields_their_rust_types_require(home):
    """Checked against the declarations cited in tests/codex/builders.py."""
    required = {
        "session_meta": {"id", "timestamp", "cwd", "originator", "cli_version"},
        "turn_context": {"cwd", "approval_policy", "sandbox_policy", "model"},
        "compacted": {"message"},
        "rollout_reference": {"rollout_path", "max_depth"},
        "message": {"role", "content"},
        "reasoning": {"summary"},
        "function_call": {"name", "arguments", "call_id"},
        "function_call_output": {"output"},
        "custom_tool_call": {"call_id", "name", "input"},
        "custom_tool_call_output": {"call_id", "output"},
        "local_shell_call": {"status", "action"},
        "user_message": {"message"},
        "agent_message": {"message"},
        "token_count": set(),
    }
    seen = set()
    for lines in home.files().values():
        for line in lines:
            assert set(line) == {"timestamp", "type", "payload"}
            payload = line["payload"]
            kind = payload["type"] if line["type"] in ("response_item", "event_msg") else line["type"]
            assert required[kind] <= set(payload), (kind, payload)
            seen.add(kind)
    assert seen == set(required)
    assert isinstance(user("x", at="t")["payload"]["content"], list)
    assert assistant("x", at="t")["payload"]["role"] == "assistant"


def test_a_cwd_chartr_cannot_place_names_its_file_and_line(home):
    from tests.codex.builders import rollout_name, session_meta

    home.write(
        f"sessions/2025/10/04/{rollout_name('2025-10-04T07-00-00', 'windows')}",
        [session_meta("windows", "C:\\Users\\me", at="t")],
    )
    with pytest.raises(CommandError) as caught:
        run("import_codex", home.root)
    assert (
        "rollout-2025-10-04T07-00-00-windows.jsonl:1: session_meta's cwd: Directory must be an absolute path."
        in str(caught.value)
    )
    assert not AgentSnapshot.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_unmigrated_database_says_how_to_migrate(home):
    from django.core.management import call_command

    call_command("migrate", "codex", "zero", verbosity=0)
    try:
        with pytest.raises(CommandError, match="not migrated .*run manage.py migrate first"):
            run("import_codex", home.root)
        with pytest.raises(CommandError, match="run manage.py migrate first"):
            run("export_codex", "--out", home.root.parent / "out")
    finally:
        call_command("migrate", "codex", verbosity=0)
    assert not AgentSnapshot.objects.exists()


def test_one_rollout_file_reads_only_itself_and_the_segments_it_refers_to(home):
    (home.root / "sessions/2025/10/09").mkdir(parents=True)
    (home.root / "sessions/2025/10/09/rollout-2025-10-09T00-00-00-other.jsonl").write_text("{broken\n")
    run("import_codex", next((home.root / "sessions").rglob(f"*{SEGMENTED}.jsonl")))
    assert list(AgentSnapshot.objects.values_list("agent_id", flat=True)) == [SEGMENTED]
    assert TimelineRow.objects.filter(agent_id=SEGMENTED).count() == 6
    with pytest.raises(CommandError, match="rollout-2025-10-09T00-00-00-other.jsonl:1: not JSON"):
        run("import_codex", home.root)


def test_a_sealed_segment_alone_is_its_threads_first_lines_and_the_home_goes_on_from_there(home):
    sealed = next((home.root / SEGMENTS_DIR).rglob("*.jsonl"))
    run("import_codex", sealed)
    assert TimelineRow.objects.filter(agent_id=SEGMENTED).count() == 2
    run("import_codex", home.root)
    files = home.files()
    assert records(SEGMENTED) == [line for path in sorted(files) if SEGMENTED in path for line in files[path]]
    assert [entry["path"] for entry in CodexThread.objects.get(pk=SEGMENTED).files][0].startswith(SEGMENTS_DIR)
