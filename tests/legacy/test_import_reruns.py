"""Reruns, dry runs and atomicity of ``import_legacy_json``: the same home twice changes nothing, a failure changes nothing."""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import asdict

import pytest
from django.core.management import CommandError

from legacy import services, timelines, write
from legacy.models import ImportRun
from legacy.problems import LegacyImportInvalid
from legacy.services import import_legacy
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory
from tests.legacy.builders import T2, row
from tests.legacy.conftest import backups, dump_database, run, timeline, without_import_runs
from timeline import services as timeline_services
from timeline.errors import ItemConflict
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db

APP = "/home/me/code/my app ü"
UTC = dt.UTC


class TestIdempotence:
    def test_second_run_changes_nothing_and_says_so(self, quirks_home):
        run(quirks_home.root)
        before = without_import_runs(dump_database())
        output = run(quirks_home.root)
        assert without_import_runs(dump_database()) == before
        assert "Nothing to change: 0 created, 23 unchanged." in output
        assert "agents:        0 created, 0 updated, 7 unchanged" in output
        assert "timeline rows: 0 created, 0 updated, 8 unchanged" in output
        assert ImportRun.objects.count() == 2

    def test_newer_input_updates_newer_records_and_appends_missing_rows(self, legacy_home):
        home = legacy_home
        project = home.project("p1", "/srv/app")
        workspace = home.workspace("w1", "p1", "/srv/app")
        home.agent("a1", "/srv/app", title="first")
        home.agent("a2", "/srv/app", title="first")
        home.timeline("a1", 3, epoch="e1")
        home.save()
        import_legacy(source=home.root)
        a2_before = AgentSnapshot.objects.get(pk="a2")

        project.update(displayName="Renamed", updatedAt=T2)
        workspace.update(displayName="older rename", updatedAt="2020-01-01T00:00:00Z")
        home.agent("a1", "/srv/app", title="second", updatedAt=T2, archivedAt=T2)
        home.agent("a2", "/srv/app", title="not newer")  # same updatedAt: unchanged
        home.timeline("a1", 6, epoch="e1")
        home.save()
        report = import_legacy(source=home.root)

        assert report.counts_dict() == {
            "projects": {"created": 0, "updated": 1, "unchanged": 0, "skipped": 0},
            "workspaces": {"created": 0, "updated": 0, "unchanged": 1, "skipped": 0},
            "agents": {"created": 0, "updated": 1, "unchanged": 1, "skipped": 0},
            "timeline_rows": {"created": 3, "updated": 0, "unchanged": 3, "skipped": 0},
        }
        assert Project.objects.get().display_name == "Renamed"
        assert Workspace.objects.get().display_name == "app"
        a1 = AgentSnapshot.objects.get(pk="a1")
        assert (a1.title, a1.version, a1.lifecycle) == ("second", 2, "closed")
        assert a1.archived_at == dt.datetime(2024, 3, 3, 10, tzinfo=UTC) and a1.archive_operation is not None
        assert (a1.timeline_head.head_seq, a1.timeline_head.epoch) == (6, "e1")
        assert [r[0] for r in timeline("a1")] == [1, 2, 3, 4, 5, 6]
        a2 = AgentSnapshot.objects.get(pk="a2")
        assert (a2.title, a2.version, a2.updated_at) == ("first", 1, a2_before.updated_at)

    def test_rows_are_appended_to_a_live_agent_without_changing_its_epoch(self, legacy_home):
        live = AgentFactory(agent_id="a1")
        legacy_home.timeline("a1", 4, epoch="from-the-file")
        legacy_home.save()
        report = import_legacy(source=legacy_home.root)
        live.refresh_from_db()
        assert (live.timeline_head.head_seq, report.counts["timeline_rows"].created) == (4, 4)
        assert live.timeline_head.epoch != "from-the-file"
        epoch = live.timeline_head.epoch
        # Running again finds the rows present even though the epochs differ.
        again = import_legacy(source=legacy_home.root)
        live.refresh_from_db()
        assert (again.counts["timeline_rows"].unchanged, again.counts["timeline_rows"].created) == (4, 0)
        assert (live.timeline_head.head_seq, live.timeline_head.epoch) == (4, epoch)

    def test_a_file_that_is_not_the_agents_history_is_refused(self, legacy_home):
        legacy_home.agent("a1", "/srv/app")
        path = legacy_home.timeline("a1", 3)
        legacy_home.save()
        import_legacy(source=legacy_home.root)
        legacy_home.timeline("a1", [row(1), row(2), row(3, text="rewritten"), row(4)])
        before = dump_database()
        with pytest.raises(LegacyImportInvalid) as exc:
            import_legacy(source=legacy_home.root)
        assert str(exc.value.problems[0]).startswith(f"{path}:line 4: row seq 3 differs from the one chartr holds")
        assert dump_database() == before

    def test_a_shared_row_as_the_database_hands_it_back_still_continues_the_history(self, legacy_home):
        big = {**row(2), "item": {"type": "assistant_message", "text": "big", "n": 1e300}}
        legacy_home.agent("a1", "/srv/app")
        legacy_home.timeline("a1", [row(1), big])
        legacy_home.save()
        import_legacy(source=legacy_home.root)
        # PostgreSQL's jsonb hands the item back with its keys reordered and 1e300 as the integer 10**300.
        reordered = {**big, "item": {"n": 1e300, "text": "big", "type": "assistant_message"}}
        legacy_home.timeline("a1", [row(1), reordered, row(3)])
        report = import_legacy(source=legacy_home.root)
        assert asdict(report.counts["timeline_rows"]) == {"created": 1, "updated": 0, "unchanged": 2, "skipped": 0}

    def test_a_new_row_reusing_an_item_id_the_agent_committed_is_an_item_conflict(self, legacy_home):
        legacy_home.agent("a1", "/srv/app")
        legacy_home.timeline("a1", 1)
        legacy_home.save()
        import_legacy(source=legacy_home.root)
        timeline_services.append_timeline_items(
            agent_id="a1", items=[timeline_services.NewTimelineItem(item={"type": "x"}, item_id="api-1")]
        )
        stored = TimelineRow.objects.get(agent_id="a1", seq=2)
        committed_at = stored.committed_at.isoformat().replace("+00:00", "Z")
        # Continuity is checked on the last shared row (seq 2, identical); row 3 reuses row 1's item id.
        legacy_home.timeline(
            "a1",
            [
                row(1, item_id="renamed"),
                {**row(2, item_id="api-1", committed_at=committed_at), "item": {"type": "x"}},
                row(3, item_id="item-1"),
            ],
        )
        before = dump_database()
        with pytest.raises(ItemConflict) as exc:
            import_legacy(source=legacy_home.root)
        assert exc.value.extra == {"item_id": "item-1", "seq": 1}
        assert dump_database() == before

    def test_an_older_shorter_file_changes_nothing(self, legacy_home):
        legacy_home.agent("a1", "/srv/app")
        legacy_home.timeline("a1", 5)
        legacy_home.save()
        import_legacy(source=legacy_home.root)
        legacy_home.timeline("a1", 2)
        report = import_legacy(source=legacy_home.root)
        assert asdict(report.counts["timeline_rows"]) == {"created": 0, "updated": 0, "unchanged": 2, "skipped": 0}
        assert TimelineHead.objects.get().head_seq == 5


class TestDryRunAndAtomicity:
    def test_dry_run_reports_the_same_and_leaves_the_database_unchanged(self, quirks_home):
        real_report_home = quirks_home.root.parent / "copy"
        shutil.copytree(quirks_home.root, real_report_home)
        before = dump_database()
        output = run(quirks_home.root, "--dry-run")
        assert dump_database() == before
        assert backups() == []
        assert "(dry run: everything rolled back)" in output
        assert "agents:        7 created, 0 updated, 0 unchanged, 0 skipped" in output
        # The real run reports exactly what the dry run did.
        real = run(real_report_home)

        def strip(text):
            return [line for line in text.splitlines()[1:] if line.startswith("  ") and ":" in line][:4]

        assert len(strip(output)) == 4 and strip(output) == strip(real)

    def test_dry_run_over_existing_data_changes_nothing(self, quirks_home):
        import_legacy(source=quirks_home.root)
        quirks_home.timeline("a-nested", 9, epoch="epoch-nested")
        quirks_home.agent("a-flat", APP + "/.worktrees/feature x", layout="flat", updatedAt=T2, title="new")
        before = dump_database()
        report = import_legacy(source=quirks_home.root, dry_run=True)
        assert report.counts["timeline_rows"].created == 4 and report.counts["agents"].updated == 1
        assert report.import_run_id is None
        assert dump_database() == before
        assert len(backups()) == 1

    def test_a_failure_late_in_the_import_leaves_nothing_behind(self, quirks_home, monkeypatch):
        def explode(*args, **kwargs):
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(services, "_record_run", explode)
        before = dump_database()
        with pytest.raises(RuntimeError, match="disk on fire"):
            import_legacy(source=quirks_home.root)
        assert dump_database() == before
        assert backups() == []

    def test_a_failure_in_the_middle_of_the_rows_leaves_nothing_behind(self, legacy_home, monkeypatch):
        legacy_home.agent("a1", "/srv/app")
        legacy_home.agent("a2", "/srv/app")
        legacy_home.timeline("a1", 7)
        legacy_home.timeline("a2", 7)
        legacy_home.save()
        monkeypatch.setattr(timelines, "ROW_BATCH", 3)
        real_insert = timeline_services._insert_batch
        calls = []

        def failing_insert(*, agent_id, first_seq, rows):
            calls.append(len(rows))
            if len(calls) == 4:
                raise RuntimeError("killed")
            return real_insert(agent_id=agent_id, first_seq=first_seq, rows=rows)

        monkeypatch.setattr(timeline_services, "_insert_batch", failing_insert)
        with pytest.raises(RuntimeError):
            import_legacy(source=legacy_home.root)
        assert calls == [3, 3, 1, 3]
        assert not AgentSnapshot.objects.exists() and not TimelineRow.objects.exists()
        assert not ImportRun.objects.exists()


def test_a_file_that_changes_between_checking_and_writing_aborts_the_import(legacy_home, monkeypatch):
    legacy_home.agent("a1", "/srv/app")
    path = legacy_home.timeline("a1", 3)
    legacy_home.save()
    real_write_agents = write._write_agents

    def write_agents_then_edit_the_file(*args, **kwargs):
        real_write_agents(*args, **kwargs)
        path.write_text(path.read_text().replace('"seq": 2', '"seq": 7'))

    monkeypatch.setattr(write, "_write_agents", write_agents_then_edit_the_file)
    with pytest.raises(CommandError) as exc:
        run(legacy_home.root, "--skip-invalid")
    assert "changed during the import; nothing was imported." in str(exc.value)
    assert f"{path}:line 3: changed during the import: seq 7 where 2 was expected" in str(exc.value)
    assert "--skip-invalid" not in str(exc.value)
    assert not AgentSnapshot.objects.exists() and backups() == []


@pytest.mark.django_db(transaction=True)
def test_a_rerun_snapshots_only_when_it_changes_something(legacy_home, settings):
    """A no-op rerun takes no data snapshot (legacy/services.py rehearses it first); one with news takes one."""
    settings.CHARTR_SNAPSHOTS_KEEP = 14

    def snapshots() -> list[str]:
        return sorted(p.name for p in (settings.DATA_DIR / "snapshots").iterdir())

    legacy_home.project("p1", "/srv/app")
    legacy_home.agent("a1", "/srv/app")
    legacy_home.save()
    first = import_legacy(source=legacy_home.root)
    assert first.snapshot is not None and snapshots() == [first.snapshot]
    before = dump_database()

    for _ in range(2):
        again = import_legacy(source=legacy_home.root)
        assert (again.snapshot, again.changed_anything, again.backup_path) == (None, False, "")
        assert again.import_run_id is not None and not again.warnings
    assert snapshots() == [first.snapshot] and len(backups()) == 1
    assert without_import_runs(dump_database()) == without_import_runs(before)

    legacy_home.agent("a1", "/srv/app", updatedAt="2099-01-01T00:00:00Z", title="renamed")
    legacy_home.save()
    changed = import_legacy(source=legacy_home.root)
    assert changed.changed_anything and changed.counts["agents"].updated == 1
    assert changed.snapshot is not None and snapshots() == [first.snapshot, changed.snapshot]
    assert AgentSnapshot.objects.get(pk="a1").title == "renamed"
    assert ImportRun.objects.count() == 4 and len(backups()) == 2
