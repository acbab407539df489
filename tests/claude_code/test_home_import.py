"""manage.py import_claude_code and export_claude_code: one representation, round trips, top-ups, reruns."""

from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError

from claude_code import selectors
from claude_code.keys import DEFAULT_NAMESPACE, SessionKey
from claude_code.models import ClaudeCodeImportRun, ClaudeCodeSession
from snapshots.models import AgentSnapshot
from tests.claude_code import home as claude_home

pytestmark = pytest.mark.django_db(transaction=True)

MAIN = SessionKey(claude_home.PROJECT_KEY, claude_home.SESSION_ID)
OTHER = SessionKey(claude_home.PROJECT_KEY, claude_home.OTHER_SESSION_ID)
SUB = SessionKey(claude_home.PROJECT_KEY, claude_home.SESSION_ID, f"subagents/agent-{claude_home.SUBAGENT_ID}")


@pytest.fixture(autouse=True)
def own_data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()


def run(command: str, *args) -> str:
    out = StringIO()
    call_command(command, *map(str, args), stdout=out)
    return out.getvalue()


def dump() -> dict:
    return {
        model._meta.label: list(model.objects.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.managed and model is not ClaudeCodeImportRun
    }


def files(root) -> dict[str, list[dict]]:
    return {
        path.relative_to(root).as_posix(): claude_home.read_transcript(path)
        for path in sorted(root.rglob("*.jsonl"))
        if "projects" in path.relative_to(root).parts
    }


def test_a_home_imports_under_the_sdks_keys_with_children_and_titles(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    output = run("import_claude_code", projects)
    assert selectors.load_entries(MAIN) == claude_home.main_session()
    assert selectors.load_entries(OTHER) == claude_home.other_session()
    sub_entries = selectors.load_entries(SUB)
    assert sub_entries == [*claude_home.subagent_session(), {**claude_home.SUBAGENT_META, "type": "agent_metadata"}]
    main_agent = AgentSnapshot.objects.get(pk=MAIN.agent_id)
    assert AgentSnapshot.objects.get(pk=SUB.agent_id).parent_id == main_agent.pk
    assert main_agent.title == "Shop tour"  # custom-title wins over summary
    assert AgentSnapshot.objects.get(pk=OTHER.agent_id).title == "Running the test suite"
    assert main_agent.workspace.directory == claude_home.CWD
    assert "3: 3 new" in output and "lines imported: 16" in output
    assert "tool-results/: large tool outputs" in output


def test_export_writes_every_line_deep_equal_and_the_sidecar(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    run("import_claude_code", projects)
    run("export_claude_code", "--out", tmp_path / "out")
    assert files(tmp_path / "out") == files(tmp_path / "home")
    meta = tmp_path / "out" / "projects" / claude_home.PROJECT_KEY / claude_home.SESSION_ID / "subagents"
    assert claude_home.read_transcript(meta / f"agent-{claude_home.SUBAGENT_ID}.meta.json") == [
        claude_home.SUBAGENT_META
    ]


def test_a_rerun_changes_nothing_and_a_growing_file_is_topped_up(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    session_file = projects / claude_home.PROJECT_KEY / f"{claude_home.SESSION_ID}.jsonl"
    assert "Data snapshot before the import" in run("import_claude_code", projects)
    before = dump()
    rerun = run("import_claude_code", projects)
    assert "Nothing to change." in rerun and "Data snapshot" not in rerun  # no snapshot rotated away
    assert dump() == before
    assert ClaudeCodeImportRun.objects.count() == 2
    more = [
        claude_home.user("u-9", "a-4", "And the prices?", n=20),
        {"type": "summary", "summary": "Teapot shop overview", "leafUuid": "a-4"},  # no uuid: once only
    ]
    with open(session_file, "a", encoding="utf-8") as handle:
        handle.writelines(claude_home.line(record) for record in more)
    output = run("import_claude_code", session_file)
    assert "1 topped up" in output and "lines imported: 2" in output
    assert selectors.load_entries(MAIN) == [*claude_home.main_session(), *more]
    after = dump()
    assert "Nothing to change." in run("import_claude_code", projects)
    assert dump() == after
    run("export_claude_code", "--out", tmp_path / "out")
    assert files(tmp_path / "out") == files(tmp_path / "home")


def test_a_cut_last_line_is_a_warning_and_comes_over_once_whole(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    session_file = projects / claude_home.PROJECT_KEY / f"{claude_home.OTHER_SESSION_ID}.jsonl"
    whole = claude_home.line(claude_home.user("o-3", "o-2", "thanks", session_id=claude_home.OTHER_SESSION_ID))
    with open(session_file, "a", encoding="utf-8") as handle:
        handle.write(whole[:25])
    output = run("import_claude_code", projects)
    assert f"{session_file}:line 4: the last line is cut short" in output
    assert len(selectors.load_entries(OTHER)) == 3
    session_file.write_text(session_file.read_text(encoding="utf-8")[:-25] + whole, encoding="utf-8")
    run("import_claude_code", projects)
    assert selectors.load_entries(OTHER)[-1]["uuid"] == "o-3"


def test_bad_lines_name_file_and_line_and_nothing_is_written(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    session_file = projects / claude_home.PROJECT_KEY / f"{claude_home.OTHER_SESSION_ID}.jsonl"
    session_file.write_text(session_file.read_text(encoding="utf-8") + "[1, 2]\n{not json\n" + "{}\n")
    before = dump()
    with pytest.raises(CommandError) as caught:
        run("import_claude_code", projects)
    assert f"{session_file}:line 4: a transcript line must be a JSON object" in str(caught.value)
    assert f"{session_file}:line 5: invalid JSON" in str(caught.value)
    assert dump() == before


def test_a_file_that_no_longer_continues_what_chartr_holds_is_refused(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    run("import_claude_code", projects)
    session_file = projects / claude_home.PROJECT_KEY / f"{claude_home.OTHER_SESSION_ID}.jsonl"
    claude_home.write_transcript(session_file, claude_home.other_session()[1:])
    before = dump()
    with pytest.raises(CommandError, match=r"line 1: chartr holds 3 lines of this session"):
        run("import_claude_code", projects)
    assert dump() == before


def test_a_dry_run_reports_and_writes_nothing(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    before = dump()
    output = run("import_claude_code", projects, "--dry-run")
    assert "dry run" in output and "lines imported: 16" in output
    assert dump() == before
    assert not ClaudeCodeImportRun.objects.exists()


def test_a_mirrored_session_exports_like_an_imported_one(tmp_path):
    from claude_code.services import append_entries

    append_entries(MAIN, claude_home.main_session())  # as the SDK's mirror appends
    run("export_claude_code", "--out", tmp_path / "out")
    exported = tmp_path / "out" / "projects" / claude_home.PROJECT_KEY / f"{claude_home.SESSION_ID}.jsonl"
    assert claude_home.read_transcript(exported) == claude_home.main_session()
    claude_home.write_transcript(
        tmp_path / "home" / "projects" / claude_home.PROJECT_KEY / exported.name, claude_home.main_session()
    )
    output = run("import_claude_code", tmp_path / "home" / "projects")
    assert "1 unchanged" in output and "lines imported: 0; titles set: 1" in output
    assert ClaudeCodeSession.objects.filter(namespace=DEFAULT_NAMESPACE).count() == 1


def test_claude41stores_real_shaped_home_round_trips_and_reruns_clean(tmp_path, monkeypatch):
    """tests/support/claude_code_home.py's home (parallel tool calls, two subagents): imported,
    exported deep-equal, and the SDK's own disk reader reads the export as it reads the original."""
    pytest.importorskip("claude_agent_sdk", reason="the dev extra's claude-agent-sdk writes this home's project key")
    from claude_agent_sdk import get_session_messages

    from tests.support.claude_code_home import write_claude_home

    home = write_claude_home(tmp_path / "claude", tmp_path / "work")
    run("import_claude_code", home.config_dir)
    before = dump()
    assert "Nothing to change." in run("import_claude_code", home.config_dir / "projects")
    assert dump() == before
    run("export_claude_code", "--out", tmp_path / "out")
    assert files(tmp_path / "out") == files(home.config_dir)
    assert len(files(tmp_path / "out")) == len(home.sessions) + sum(map(len, home.subagents.values()))
    for session_id in home.sessions:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home.config_dir))
        original = get_session_messages(session_id, directory=str(home.cwd))
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "out"))
        assert get_session_messages(session_id, directory=str(home.cwd)) == original


def test_a_database_not_migrated_says_how_to_migrate(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    call_command("migrate", "claude_code", "0001", verbosity=0)
    try:
        with pytest.raises(
            CommandError, match=r"not migrated \(\d+ migration\(s\) not applied\); run manage.py migrate"
        ):
            run("import_claude_code", projects)
        with pytest.raises(CommandError, match="run manage.py migrate first"):
            run("export_claude_code", "--out", tmp_path / "out")
    finally:
        call_command("migrate", verbosity=0)


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar_and_logs_get_one_line_per_phase(tmp_path):
    projects = claude_home.write_home(tmp_path / "home")
    terminal = _Terminal()
    call_command("import_claude_code", str(projects), "--dry-run", stdout=terminal)
    assert "\rimporting sessions: 2/3\x1b[K" in terminal.getvalue()
    assert "\r\x1b[KImport of" in terminal.getvalue()  # the bar is cleared before the report
    logged = run("import_claude_code", projects, "--dry-run")
    assert "\r" not in logged and logged.startswith("reading transcripts...\nimporting sessions...\n")


def test_import_runs_are_listed_read_only_in_the_admin(tmp_path, admin_client):
    projects = claude_home.write_home(tmp_path / "home")
    run("import_claude_code", projects)
    page = admin_client.get("/admin/claude_code/claudecodeimportrun/").content.decode()
    assert str(projects.resolve()) in page and "sessions created 3" in page
    run_id = ClaudeCodeImportRun.objects.get().pk
    change = admin_client.get(f"/admin/claude_code/claudecodeimportrun/{run_id}/change/").content.decode()
    assert "tool-results/: large tool outputs" in change and 'name="_save"' not in change
    assert admin_client.get("/admin/claude_code/claudecodeimportrun/add/").status_code == 403
