"""A whole Paseo home: both history stores, every record Paseo accepts, read back through the API."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from io import StringIO

import pytest
from django.core.management import call_command

from legacy import backup as legacy_backup
from legacy.export import write_timeline_file
from legacy.models import ImportRun
from legacy.services import import_legacy
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.legacy.builders import LegacyHome, paseo_history_db, paseo_history_file, paseo_row
from tests.legacy.conftest import backups, dump_database, run
from tests.timeline.live.support import Reader
from tests.timeline.live.support import db as stream_db
from tests.timeline.live.support import run as run_stream
from timeline.live.hub import Hub
from timeline.live.stream import TimelineStream
from timeline.models import TimelineHead
from timeline.writes.counters import check_counters

pytestmark = pytest.mark.django_db

APP = "/srv/app"
#: agent id -> (epoch, seqs) of the history the import must carry over
EXPECTED = {
    "a-file": ("ep-file", list(range(1, 6))),
    "a-pruned": ("ep-pruned", list(range(11, 16))),
    "a-db": ("ep-db", [1, 2, 3]),
    "a-both": ("ep-new", [1, 2, 3, 4]),
}


@pytest.fixture
def paseo_home(legacy_home):
    home = legacy_home
    home.project("p-app", APP, gitRemote="git@example.com:me/app.git")
    home.workspace("w-app", "p-app", APP, branch="main", worktreeRoot=APP)
    home.workspace(
        "w-feat",
        "p-app",
        APP + "/.worktrees/feat",
        kind="worktree",
        branch="feat",
        worktreeRoot=APP + "/.worktrees/feat",
    )
    for agent_id in ("a-file", "a-pruned", "a-db", "a-both", "a-backfill", "a-future"):
        home.agent(agent_id, APP)
    # Attention without a reason: the key absent altogether.
    attention = home.agent("a-attention", APP, requiresAttention=True)
    record = json.loads(attention.read_text())
    del record["attentionReason"]
    attention.write_text(json.dumps(record))
    home.agent("a-sub", APP + "/packages/ui")

    paseo_history_file(home, "a-file", range(1, 6), epoch="ep-file")
    # A row key chartr has no place for is ignored.
    path = paseo_history_file(home, "a-pruned", range(11, 16), epoch="ep-pruned", nextSeq=16)
    document = json.loads(path.read_text())
    document["rows"][0]["renderHint"] = {"collapsed": True}
    path.write_text(json.dumps(document))
    paseo_history_file(home, "a-both", range(1, 5), epoch="ep-new")
    paseo_history_file(home, "ghost", range(1, 3), epoch="ep-ghost")  # an orphan: no agent record
    paseo_history_file(home, "a-future", range(1, 3), epoch="ep-future", version=2)
    paseo_history_db(
        home,
        {
            "a-db": ("ep-db", 1, [1, 2, 3]),
            "a-backfill": ("ep-backfill", 0, [1, 2]),
            "a-both": ("ep-old", 1, [1, 2]),  # the stale cache copy: the file wins
        },
    )
    home.write_file(home.root / "plugins" / "x.json", "{}")
    home.write_file(home.root / "daemon.log", "hello")
    home.save()
    return home


def rows_of(api, agent_id: str, *, after: int = 0) -> dict:
    response = api.get(f"/api/v1/agents/{agent_id}/timeline", {"direction": "after", "seq": after, "limit": 1000})
    assert response.status_code == 200, response.content
    return response.json()


def test_histories_come_over_as_paseo_had_them(paseo_home, api):
    import_legacy(source=paseo_home.root)
    for agent_id, (epoch, seqs) in EXPECTED.items():
        page = rows_of(api, agent_id)
        assert page["epoch"] == epoch, agent_id
        assert [row["seq"] for row in page["rows"]] == seqs, agent_id
        assert page["window"] == {"min_seq": seqs[0], "max_seq": seqs[-1], "next_seq": seqs[-1] + 1}
        for row in page["rows"]:
            source = paseo_row(row["seq"])
            assert row["item"] == source["item"]
            assert dt.datetime.fromisoformat(row["committed_at"]) == dt.datetime.fromisoformat(source["timestamp"])
            assert row["turn_id"] == (None if agent_id == "a-db" else "turn-1")
    assert TimelineHead.objects.get(pk="a-pruned").min_seq == 11
    for agent_id in ("a-backfill", "a-future", "a-attention"):
        assert rows_of(api, agent_id)["rows"] == []


def test_a_paseo_cursor_resumes_without_reset(paseo_home, api):
    import_legacy(source=paseo_home.root)
    url = "/api/v1/agents/a-pruned/timeline"
    page = api.get(url, {"direction": "after", "seq": 13, "epoch": "ep-pruned"}).json()
    assert [row["seq"] for row in page["rows"]] == [14, 15]
    assert (page["reset"], page["stale_cursor"], page["gap"]) == (False, False, False)
    # A cursor right before the retained rows resumes too; one further below is a gap.
    edge = api.get(url, {"direction": "after", "seq": 10, "epoch": "ep-pruned"}).json()
    assert (edge["reset"], edge["gap"], edge["rows"][0]["seq"]) == (False, False, 11)
    gap = api.get(url, {"direction": "after", "seq": 3, "epoch": "ep-pruned"}).json()
    assert (gap["reset"], gap["gap"], gap["stale_cursor"], gap["rows"][0]["seq"]) == (True, True, False, 11)
    # New rows continue the same history.
    appended = api.post(
        "/api/v1/agents/a-pruned/timeline", {"items": [{"item": {"type": "user_message", "text": "go"}}]}, format="json"
    ).json()
    assert (appended["rows"][0]["seq"], appended["epoch"]) == (16, "ep-pruned")


def test_every_record_paseo_accepts_is_imported(paseo_home, api):
    import_legacy(source=paseo_home.root)
    attention = AgentSnapshot.objects.get(pk="a-attention")
    assert (attention.requires_attention, attention.attention_reason) == (True, None)
    sub = api.get("/api/v1/agents/a-sub").json()
    workspace = Workspace.objects.get(directory=APP)
    assert (sub["cwd"], sub["workspace_id"]) == (APP + "/packages/ui", workspace.pk)
    assert not Workspace.objects.filter(directory=APP + "/packages/ui").exists()
    assert Project.objects.get(directory=APP).git_remote == "git@example.com:me/app.git"
    assert (workspace.branch, workspace.worktree_root) == ("main", APP)
    feat = api.get(f"/api/v1/workspaces/{Workspace.objects.get(branch='feat').pk}").json()
    assert feat["worktree_root"] == APP + "/.worktrees/feat"


def test_nothing_is_skipped_silently(paseo_home):
    report = import_legacy(source=paseo_home.root)
    skipped = "\n".join(report.skipped_files)
    assert "ghost" in skipped and "orphan history" in skipped
    assert "a-backfill" in skipped and "interrupted backfill" in skipped
    assert "unknown version 2" in skipped
    assert len(report.skipped_files) == 3
    assert "the current file" in "\n".join(report.warnings) and "ep-old" not in skipped
    assert sorted(report.unread) == sorted(str(paseo_home.root / name) for name in ("daemon.log", "plugins"))
    assert sorted(report.rows_by_agent) == sorted(EXPECTED)
    assert report.rows_by_agent["a-pruned"].startswith("5 created, 0 unchanged (seq 11..15")
    counts = report.counts["timeline_rows"]
    # ghost (2), the interrupted backfill (2); the unknown version is not read at all.
    assert (counts.created, counts.skipped) == (17, 4)


# A real process's import runs outside any transaction, and so takes its pre-import snapshot.
@pytest.mark.django_db(transaction=True)
def test_dry_run_prints_the_same_report(paseo_home):
    def sections(text):
        return [line for line in text.splitlines() if line.startswith("  ") or line.endswith("):")]

    dry = run(paseo_home.root, "--dry-run")
    assert not AgentSnapshot.objects.exists() and backups() == []
    real = run(paseo_home.root)
    assert sections(dry) == sections(real)
    for expected in ("History files skipped (3):", "Timeline rows by agent (4):", "Entries of the home not read (2):"):
        assert expected in real


def test_off_a_terminal_one_line_per_phase(paseo_home):
    output = run(paseo_home.root)
    assert "\r" not in output
    phases = [line for line in output.splitlines() if line.endswith("...")]
    assert len(phases) == len(set(phases)) and "importing Paseo history rows..." in phases
    assert "checking Paseo histories..." in phases


def test_a_second_run_changes_and_copies_nothing(paseo_home):
    first = import_legacy(source=paseo_home.root)
    assert first.backup_path and len(backups()) == 1
    before = {label: rows for label, rows in dump_database().items() if label != "legacy.ImportRun"}
    second = import_legacy(source=paseo_home.root)
    assert not second.changed_anything and second.backup_path == ""
    assert {label: rows for label, rows in dump_database().items() if label != "legacy.ImportRun"} == before
    assert len(backups()) == 1 and ImportRun.objects.count() == 2
    assert second.counts["timeline_rows"].unchanged == 17
    assert "Nothing changed, so no backup was made." in run(paseo_home.root)


def test_a_run_that_changes_something_says_where_the_input_went(paseo_home, settings):
    """Without a data snapshot (CHARTR_SNAPSHOTS_KEEP=0) the input is still backed up, and the
    report says so, not that nothing changed."""
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    output = run(paseo_home.root)
    assert f"Input backed up to {backups()[0]}" in output
    assert "Nothing changed" not in output


def test_new_rows_in_paseo_are_appended_on_a_rerun(paseo_home, api):
    import_legacy(source=paseo_home.root)
    paseo_history_file(paseo_home, "a-pruned", range(11, 19), epoch="ep-pruned")
    report = import_legacy(source=paseo_home.root)
    assert report.counts["timeline_rows"].created == 3
    assert [row["seq"] for row in rows_of(api, "a-pruned")["rows"]] == list(range(11, 19))
    # The agents' row and byte counters moved with every imported row, on both runs.
    assert check_counters(repair=False) == []
    assert TimelineHead.objects.get(pk="a-pruned").committed_rows == 8


def test_an_interrupted_copy_leaves_no_half_backup(paseo_home, monkeypatch):
    real_copytree = shutil.copytree

    def copy_then_fail(source, *args, **kwargs):
        real_copytree(source, *args, **kwargs)
        # Mid-copy (a crash here would leave it), the copy has only its temporary name.
        assert [entry.name.startswith(legacy_backup.PARTIAL_PREFIX) for entry in backups()] == [True]
        if source.name == "agent-timelines":
            raise OSError("disk full")

    monkeypatch.setattr(legacy_backup.shutil, "copytree", copy_then_fail)
    with pytest.raises(OSError, match="disk full"):
        import_legacy(source=paseo_home.root)
    assert backups() == [] and not AgentSnapshot.objects.exists()


def test_latest_activity_first_after_import_and_appends(paseo_home, api):
    import_legacy(source=paseo_home.root)
    api.post(
        "/api/v1/agents/a-db/timeline", {"items": [{"item": {"type": "user_message", "text": "hi"}}]}, format="json"
    )
    listed = api.get("/api/v1/agents", {"ordering": "-last_activity_at", "limit": 3}).json()["results"]
    assert listed[0]["agent_id"] == "a-db"
    # The imported histories set the activity times from their rows.
    assert TimelineHead.objects.get(pk="a-pruned").last_activity_at == dt.datetime.fromisoformat(
        paseo_row(15)["timestamp"]
    )


def test_an_export_of_a_pruned_history_imports_back_exactly(paseo_home, api, tmp_path):
    import_legacy(source=paseo_home.root)
    before = rows_of(api, "a-pruned")
    out = tmp_path / "export" / "timelines"
    out.mkdir(parents=True)
    write_timeline_file(agent_id="a-pruned", path=out / "a-pruned.jsonl")
    AgentSnapshot.objects.filter(pk="a-pruned").delete()
    home = LegacyHome(tmp_path / "export")
    home.agent("a-pruned", APP)
    import_legacy(source=home.save())
    after = rows_of(api, "a-pruned")
    assert (after["epoch"], after["window"], after["rows"]) == (before["epoch"], before["window"], before["rows"])
    assert after["rows"][0]["turn_id"] == "turn-1" and after["window"]["min_seq"] == 11


@stream_db
def test_a_paseo_cursor_resumes_on_the_stream_without_reset(paseo_home):
    import_legacy(source=paseo_home.root)

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, "a-pruned", after_seq=13, epoch="ep-pruned"))
        kind, data, event_id = await reader.next()
        assert (kind, data["reason"], data["epoch"], event_id) == ("agent", "snapshot", "ep-pruned", "13")
        assert await reader.committed_seqs(2) == [14, 15]
        await reader.close()

    run_stream(scenario)


@pytest.mark.django_db(transaction=True)
def test_an_import_snapshots_first(paseo_home, settings):
    out = run(paseo_home.root)
    listing = StringIO()
    call_command("restore", "--list", stdout=listing)
    [line] = [line for line in listing.getvalue().splitlines() if "pre-import" in line]
    name = line.split()[0]
    assert f"Data snapshot before the import: {name}" in out
    assert not any("No data snapshot" in line for line in out.splitlines())
    # Reruns that change nothing take no snapshot: the one that undoes the import stays the newest.
    for _ in range(3):
        again = run(paseo_home.root)
        assert "Data snapshot before the import" not in again and "Nothing changed" in again
    assert sorted(p.name for p in (settings.DATA_DIR / "snapshots").iterdir()) == [name]
    assert ImportRun.objects.count() == 4
