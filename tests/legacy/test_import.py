from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from legacy import timelines
from legacy.models import ImportRun
from legacy.problems import LegacyImportInvalid
from legacy.services import import_legacy
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory
from tests.legacy.builders import row
from tests.legacy.conftest import backups, dump_database, run, timeline
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db

APP = "/home/me/code/my app ü"
UTC = dt.UTC


class TestQuirks:
    def test_every_quirk_maps_as_specified(self, quirks_home):
        report = import_legacy(source=quirks_home.root)

        # projects: deduplicated by directory, newest wins; non_git -> directory; archived on their own
        assert Project.objects.count() == 4  # 3 legacy directories + the orphan's
        app = Project.objects.get(directory=APP)
        assert (app.kind, app.display_name) == ("git", "my app ü")
        assert app.created_at == dt.datetime(2024, 3, 1, 10, tzinfo=UTC)
        notes = Project.objects.get(directory="/home/me/notes")
        assert (notes.kind, notes.display_name) == ("directory", "Notes")
        old = Project.objects.get(directory="/home/me/old")
        assert old.archived_at == dt.datetime(2024, 3, 2, 10, tzinfo=UTC) and old.archive_operation is not None

        # workspaces: local_checkout -> checkout; directory and worktree stay
        kinds = dict(Workspace.objects.values_list("directory", "kind"))
        assert kinds[APP] == "checkout"
        assert kinds[APP + "/.worktrees/feature x"] == "worktree"
        assert kinds["/home/me/notes"] == "directory"
        feature = Workspace.objects.get(directory=APP + "/.worktrees/feature x")
        assert feature.branch == "feature x" and feature.project == app
        # each record the legacy data archived has its own operation
        operations = [
            old.archive_operation,
            *Workspace.objects.filter(project=old).values_list("archive_operation", flat=True),
            AgentSnapshot.objects.get(pk="a-archived").archive_operation,
        ]
        assert None not in operations and len(set(operations)) == 4

        # agents: both layouts, newest duplicate wins, tmp files skipped
        assert set(AgentSnapshot.objects.values_list("agent_id", flat=True)) == {
            "a-nested",
            "a-flat",
            "a-dup",
            "a-archived",
            "a-attention",
            "a-stale",
            "a-orphan",
        }
        nested = AgentSnapshot.objects.get(pk="a-nested")
        assert (nested.workspace.directory, nested.lifecycle, nested.labels) == (APP, "running", {"team": "core"})
        assert AgentSnapshot.objects.get(pk="a-dup").title == "newest copy"
        assert TimelineHead.objects.get(pk="a-flat").last_activity_at == dt.datetime(2024, 3, 2, 10, tzinfo=UTC)
        archived = AgentSnapshot.objects.get(pk="a-archived")
        assert archived.archived_at is not None and archived.lifecycle == "closed"
        attention = AgentSnapshot.objects.get(pk="a-attention")
        assert (attention.requires_attention, attention.attention_reason) == (True, "permission")
        assert attention.attention_at == dt.datetime(2024, 3, 2, 10, tzinfo=UTC)
        assert attention.persistence == {"provider": "claude", "sessionId": "s-1", "nativeHandle": "h"}
        stale = AgentSnapshot.objects.get(pk="a-stale")
        assert (stale.requires_attention, stale.attention_reason, stale.lifecycle) == (False, None, "closed")

        # the agent whose cwd matches no workspace got a directory project and a checkout workspace
        orphan = AgentSnapshot.objects.select_related("workspace__project").get(pk="a-orphan")
        assert orphan.workspace.directory == "/tmp/scratch pad/ünï" and orphan.workspace.kind == "checkout"
        assert orphan.workspace.project.directory == "/tmp/scratch pad/ünï"
        assert (orphan.workspace.project.kind, orphan.workspace.project.display_name) == ("directory", "ünï")
        assert orphan.workspace.project.created_at == dt.datetime(2024, 2, 1, 8, tzinfo=UTC)

        # timelines: contiguous, head and epoch from the header, truncated tail dropped
        assert [r[0] for r in timeline("a-nested")] == [1, 2, 3, 4, 5]
        assert (nested.timeline_head.head_seq, nested.timeline_head.epoch) == (5, "epoch-nested")
        flat = AgentSnapshot.objects.get(pk="a-flat")
        assert (flat.timeline_head.head_seq, flat.timeline_head.epoch) == (3, "epoch-flat")
        rows = timeline("a-flat")
        assert [r[2] for r in rows] == ["item-1", None, "item-3"]
        assert rows[2][4]["text"] == "ünïcödé \u2028 line sep" and rows[2][3] == "assistant_message"
        assert (archived.timeline_head.head_seq, archived.timeline_head.epoch) == (0, "epoch-empty")

        assert report.counts_dict() == {
            "projects": {"created": 4, "updated": 0, "unchanged": 0, "skipped": 0},
            "workspaces": {"created": 6, "updated": 0, "unchanged": 0, "skipped": 0},
            "agents": {"created": 7, "updated": 0, "unchanged": 0, "skipped": 0},
            "timeline_rows": {"created": 8, "updated": 0, "unchanged": 0, "skipped": 0},
        }
        warnings = "\n".join(report.warnings)
        assert ".agent.tmp-123" in warnings and ".agent.tmp-456.json" in warnings
        assert "a-flat.jsonl:line 5: the last line is truncated" in warnings
        assert "superseded by the newer" in warnings and "a-dup-backup.json" in warnings
        assert report.skipped == []

    def test_command_reports_counts_backup_and_run(self, quirks_home):
        output = run(quirks_home.root)
        assert "agents:        7 created, 0 updated, 0 unchanged, 0 skipped" in output
        assert "timeline rows: 8 created" in output
        assert "the last line is truncated" in output
        (backup,) = backups()
        assert f"Input backed up to {backup}" in output
        run_record = ImportRun.objects.get()
        assert run_record.source_path == str(quirks_home.root.resolve())
        assert run_record.backup_path == str(backup)
        assert run_record.counts["agents"]["created"] == 7
        assert any("truncated" in warning for warning in run_record.warnings)
        assert run_record.started_at <= run_record.finished_at

    def test_backup_is_a_copy_of_the_input_files(self, quirks_home):
        report = import_legacy(source=quirks_home.root)
        (backup,) = backups()
        assert str(backup) == report.backup_path
        originals = sorted(p.relative_to(quirks_home.root) for p in quirks_home.root.rglob("*") if p.is_file())
        copies = sorted(p.relative_to(backup) for p in backup.rglob("*") if p.is_file())
        assert originals == copies and len(originals) > 10
        for relative in originals:
            assert (backup / relative).read_bytes() == (quirks_home.root / relative).read_bytes()


class TestInvalidInput:
    def build_invalid(self, home):
        home.project("p1", "/srv/one")
        home.project("p2", "/srv/two", kind="svn")  # [1]: bad kind
        home.project("p3", "relative/path")  # [2]: not absolute
        home.workspace("w1", "p1", "/srv/one")
        home.workspace("w2", "p-missing", "/srv/missing")  # [1]: unknown project
        home.workspace("w3", "p2", "/srv/two")  # [2]: project record invalid
        home.agent("a-good", "/srv/one")
        home.write_file(home.root / "agents" / "srv-one" / "a-broken.json", '{"id": "a-broken",\n  "cwd": }')
        home.agent("a-bad-status", "/srv/one", lastStatus="sleeping")
        home.timeline("a-good", [row(1), row(3)])  # line 3: seq gap
        home.timeline("a-ghost", 1)  # no such agent
        home.timeline("a-bad-status", 1)  # its agent is invalid
        return home.save()

    def test_every_problem_is_reported_and_nothing_is_written(self, legacy_home):
        root = self.build_invalid(legacy_home)
        before = dump_database()
        with pytest.raises(CommandError) as exc:
            run(root)
        message = str(exc.value)
        projects, workspaces = root / "projects" / "projects.json", root / "projects" / "workspaces.json"
        for expected in [
            f"{projects}:line 14 [1]: kind must be one of 'git', 'non_git', not 'svn'",
            f"{projects}:line 22 [2]: rootPath: Directory must be an absolute path.",
            f"{workspaces}:[1]: names project 'p-missing', which is not in projects/projects.json",
            f"{workspaces}:[2]: names project 'p2', whose record is invalid",
            f"{root / 'agents' / 'srv-one' / 'a-broken.json'}:line 2: invalid JSON",
            "a-bad-status.json:line 10: lastStatus must be one of",
            f"{root / 'timelines' / 'a-good.jsonl'}:line 3: seq 3 where 2 was expected",
            f"{root / 'timelines' / 'a-ghost.jsonl'}: no agent 'a-ghost' in agents/ or in chartr",
            f"{root / 'timelines' / 'a-bad-status.jsonl'}: agent 'a-bad-status' has an invalid record",
            "--skip-invalid",
        ]:
            assert expected in message
        assert dump_database() == before
        assert backups() == []

    def test_skip_invalid_imports_the_valid_rest_and_lists_what_it_skipped(self, legacy_home):
        root = self.build_invalid(legacy_home)
        output = run(root, "--skip-invalid")
        assert set(Project.objects.values_list("directory", flat=True)) == {"/srv/one"}
        assert list(Workspace.objects.values_list("directory", flat=True)) == ["/srv/one"]
        assert list(AgentSnapshot.objects.values_list("agent_id", flat=True)) == ["a-good"]
        # a timeline with a bad line is skipped whole, so seq stays contiguous
        assert not TimelineRow.objects.exists()
        assert TimelineHead.objects.get().head_seq == 0
        assert "Skipped 9 invalid file(s) or record(s):" in output
        assert "names project 'p-missing'" in output and "a-broken.json:line 2" in output
        assert "projects:      1 created, 0 updated, 0 unchanged, 2 skipped" in output
        assert "timeline rows: 0 created, 0 updated, 0 unchanged, 4 skipped" in output
        assert len(ImportRun.objects.get().skipped) == 9

    def test_whole_file_errors_name_the_line(self, legacy_home):
        legacy_home.write_file(legacy_home.root / "projects" / "projects.json", '[\n{"projectId": "p1",,}]')
        legacy_home.write_file(legacy_home.root / "projects" / "workspaces.json", '{"not": "an array"}')
        with pytest.raises(LegacyImportInvalid) as exc:
            import_legacy(source=legacy_home.root)
        problems = [str(problem) for problem in exc.value.problems]
        assert problems[0].startswith(f"{legacy_home.root / 'projects' / 'projects.json'}:line 2: invalid JSON")
        assert problems[1] == f"{legacy_home.root / 'projects' / 'workspaces.json'}: expected a JSON array, found dict"

    def test_pathological_json_is_reported_not_crashed(self, legacy_home):
        projects = legacy_home.root / "projects" / "projects.json"
        legacy_home.write_file(projects, "[" + "9" * 5000 + "]")
        legacy_home.write_file(legacy_home.root / "projects" / "workspaces.json", "[" * 100_000)
        with pytest.raises(CommandError) as exc:
            run(legacy_home.root)
        message = str(exc.value)
        assert f"{projects}: invalid JSON" in message
        assert "workspaces.json: invalid JSON" in message

    def test_a_directory_without_legacy_data_says_what_was_expected(self, tmp_path):
        (tmp_path / "something else").mkdir()
        with pytest.raises(CommandError) as exc:
            run(tmp_path)
        assert "expected projects/projects.json, projects/workspaces.json, agents/, timelines/" in str(exc.value)
        with pytest.raises(CommandError, match="not a directory"):
            run(tmp_path / "missing")

    def test_bad_timeline_lines(self, legacy_home):
        legacy_home.agent("a1", "/srv/a")
        legacy_home.timeline(
            "a1",
            [
                row(1),
                "{not json",
                row(3, item_id="item-1"),
                {"seq": 4, "committed_at": "yesterday", "item": {}},
                {"seq": 5, "committed_at": "2024-01-01T00:00:00Z", "item_id": None, "item": {"no": "type"}},
            ],
        )
        legacy_home.save()
        with pytest.raises(LegacyImportInvalid) as exc:
            import_legacy(source=legacy_home.root)
        reasons = [(problem.location, problem.reason) for problem in exc.value.problems]
        assert reasons[0][0] == "line 3" and reasons[0][1].startswith("invalid JSON")
        assert reasons[1] == ("line 4", "item_id 'item-1' repeats line 2")
        assert reasons[2] == ("line 5", "committed_at must be an ISO 8601 time, not 'yesterday'")
        assert reasons[3] == ("line 6", 'item must have a "type" string of 1 to 64 characters')

    def test_header_must_match_the_file(self, legacy_home):
        legacy_home.agent("a1", "/srv/a")
        path = legacy_home.timeline("a1", 1)
        path.write_text(path.read_text().replace('"agent_id": "a1"', '"agent_id": "a2"'))
        legacy_home.save()
        with pytest.raises(LegacyImportInvalid) as exc:
            import_legacy(source=legacy_home.root)
        assert str(exc.value.problems[0]) == f"{path}:line 1: header agent_id 'a2' does not match the file name"


class TestProgress:
    def test_progress_goes_to_a_terminal_only(self, quirks_home):
        class Terminal(StringIO):
            def isatty(self):
                return True

        terminal = Terminal()
        call_command("import_legacy_json", str(quirks_home.root), "--dry-run", stdout=terminal)
        assert "\rchecking timelines: 3/3" in terminal.getvalue()
        assert "\rimporting timeline rows: 8/8" in terminal.getvalue()
        plain = run(quirks_home.root, "--dry-run")
        assert "\r" not in plain

    def test_progress_callback_counts_rows_in_batches(self, legacy_home, monkeypatch):
        monkeypatch.setattr(timelines, "ROW_BATCH", 4)
        legacy_home.agent("a1", "/srv/app")
        legacy_home.timeline("a1", 10)
        legacy_home.save()
        seen = []
        import_legacy(source=legacy_home.root, progress=lambda phase, done, total: seen.append((phase, done, total)))
        assert [s for s in seen if s[0] == "importing timeline rows"] == [
            ("importing timeline rows", 4, 10),
            ("importing timeline rows", 8, 10),
            ("importing timeline rows", 10, 10),
        ]


class TestIdentity:
    def test_an_agent_without_a_workspace_reuses_the_project_at_its_directory(self, legacy_home):
        legacy_home.project("p1", "/srv/app", kind="non_git")
        legacy_home.agent("a1", "/srv/app")
        legacy_home.save()
        report = import_legacy(source=legacy_home.root)
        project = Project.objects.get()
        workspace = AgentSnapshot.objects.get().workspace
        assert (workspace.directory, workspace.kind, workspace.project) == ("/srv/app", "checkout", project)
        assert (report.counts["projects"].created, report.counts["workspaces"].created) == (1, 1)

    def test_existing_records_stay_where_they_are(self, legacy_home, project_factory, workspace_factory):
        elsewhere = project_factory(directory="/srv/elsewhere")
        workspace_factory(project=elsewhere, directory="/srv/app/ws")
        AgentFactory(agent_id="a1", workspace=workspace_factory(project=elsewhere, directory="/srv/elsewhere/ws"))
        legacy_home.project("p1", "/srv/app", updatedAt="2099-01-01T00:00:00Z")
        legacy_home.workspace("w1", "p1", "/srv/app/ws", updatedAt="2099-01-01T00:00:00Z", displayName="renamed")
        legacy_home.agent("a1", "/srv/app/ws", updatedAt="2099-01-01T00:00:00Z", title="renamed")
        legacy_home.save()
        report = import_legacy(source=legacy_home.root)
        workspace = Workspace.objects.get(directory="/srv/app/ws")
        assert (workspace.project, workspace.display_name) == (elsewhere, "renamed")
        agent = AgentSnapshot.objects.get(pk="a1")
        assert (agent.workspace.directory, agent.title) == ("/srv/elsewhere/ws", "renamed")
        warnings = "\n".join(report.warnings)
        assert "workspace /srv/app/ws belongs to another project in chartr; it stays there" in warnings
        assert "agent a1 has cwd /srv/app/ws but is in workspace /srv/elsewhere/ws in chartr" in warnings

    def test_live_streams_hear_about_created_and_updated_agents(self, legacy_home, django_capture_on_commit_callbacks):
        from snapshots.signals import agents_changed

        heard = []

        def listener(sender, agent_ids, reason, **kwargs):
            heard.append((reason, sorted(agent_ids)))

        agents_changed.connect(listener)
        try:
            AgentFactory(agent_id="old")
            legacy_home.agent("old", "/srv/app", updatedAt="2099-01-01T00:00:00Z")
            legacy_home.agent("new", "/srv/app")
            legacy_home.save()
            heard.clear()
            with django_capture_on_commit_callbacks(execute=True):
                import_legacy(source=legacy_home.root)
            assert sorted(heard) == [("created", ["new"]), ("updated", ["old"])]
            heard.clear()
            with django_capture_on_commit_callbacks(execute=True):
                import_legacy(source=legacy_home.root, dry_run=True)
            assert heard == []
        finally:
            agents_changed.disconnect(listener)


class TestNulAndSignals:
    def test_nul_characters_are_refused_on_every_database(self, legacy_home):
        legacy_home.agent("a1", "/srv/app", title="bad\u0000title")
        legacy_home.agent("a2", "/srv/app")
        legacy_home.timeline("a2", [row(1), {**row(2), "item": {"type": "t", "text": "x\u0000y"}}])
        legacy_home.save()
        with pytest.raises(LegacyImportInvalid) as exc:
            import_legacy(source=legacy_home.root)
        assert [(p.location, p.reason) for p in exc.value.problems] == [
            ("line 8", "title contains a NUL character (\\u0000), which chartr cannot store"),
            ("line 3", "contains a NUL character (\\u0000), which chartr cannot store"),
        ]

    def test_live_subscribers_hear_about_imported_rows(self, legacy_home, django_capture_on_commit_callbacks):
        from timeline.signals import timeline_committed

        heard = []

        def listener(sender, agent_id, head_seq, epoch, **kwargs):
            heard.append((agent_id, head_seq, epoch))

        timeline_committed.connect(listener)
        try:
            live = AgentFactory(agent_id="live")
            legacy_home.agent("new", "/srv/app")
            legacy_home.timeline("new", 2, epoch="file-epoch")
            legacy_home.timeline("live", 3, epoch="other-epoch")
            legacy_home.save()
            with django_capture_on_commit_callbacks(execute=True):
                import_legacy(source=legacy_home.root)
            assert sorted(heard) == [("live", 3, live.timeline_head.epoch), ("new", 2, "file-epoch")]
        finally:
            timeline_committed.disconnect(listener)


def test_imported_running_agents_are_stale_at_once(quirks_home, api):
    """Their old daemon is gone: chartr never heard from them, so a running one is stale, archived ones are not."""
    run(quirks_home.root)
    stale = [row["agent_id"] for row in api.get("/api/v1/agents?stale=true&archived=all").json()["results"]]
    assert stale == ["a-nested"]
    assert api.post("/api/v1/agents/a-nested/heartbeat").status_code == 204
    assert api.get("/api/v1/agents?stale=true").json()["results"] == []
