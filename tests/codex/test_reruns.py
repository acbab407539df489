"""import_codex again: a rerun changes nothing, a top-up brings only the new lines, also across a
rotation into a new segment; export_codex gives the home back deep-equal."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from codex.models import CodexImportRun, CodexThread
from snapshots.models import AgentSnapshot
from tests.codex.builders import LIVE, SEGMENTED, CodexHomeBuilder, assistant, line, rollout_name, session_meta, user
from tests.codex.conftest import dump_database, records, run
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db


def live_path(home: CodexHomeBuilder, thread_id: str) -> str:
    return next(path for path in home.files() if thread_id in path and path.startswith("sessions/"))


def test_a_rerun_changes_nothing(home):
    run("import_codex", home.root)
    before = dump_database(runs=False)
    output = run("import_codex", home.root)
    assert dump_database(runs=False) == before
    assert "Nothing to change." in output
    assert "Rows by thread" not in output
    assert "rows:      0 created" in output
    assert CodexImportRun.objects.count() == 2


def test_a_top_up_brings_only_the_lines_added_since(home):
    run("import_codex", home.root)
    seqs_before = list(TimelineRow.objects.filter(agent_id=LIVE).order_by("seq").values_list("seq", "item"))
    added = [user("And lint it", at="2025-10-01T11:00:00.000Z"), assistant("Linted.", at="2025-10-01T11:00:05.000Z")]
    home.append(live_path(home, LIVE), added)
    output = run("import_codex", home.root)
    assert "rows:      2 created" in output
    rows = list(TimelineRow.objects.filter(agent_id=LIVE).order_by("seq").values_list("seq", "item"))
    assert rows[: len(seqs_before)] == seqs_before
    assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1))
    assert [item["record"] for _, item in rows[len(seqs_before) :]] == added


def test_a_top_up_follows_the_live_file_into_its_new_segment(tmp_path):
    """Imported mid-thread; then Codex writes more, seals the file and starts a new segment that
    refers back to it, and writes more there: the next run brings exactly the lines in between and after."""
    home = CodexHomeBuilder(tmp_path / "home")
    relative = f"sessions/2025/11/05/{rollout_name('2025-11-05T08-00-00', SEGMENTED)}"
    home.write(
        relative, [session_meta(SEGMENTED, "/srv/x", at="2025-11-05T08:00:00Z"), user("one", at="2025-11-05T08:00:01Z")]
    )
    run("import_codex", home.root)
    home.append(relative, [assistant("two", at="2025-11-05T08:00:02Z")])  # after the import, before the seal
    sealed = home.rotate(relative, SEGMENTED, at="2025-11-05T08:10:00Z")
    home.append(relative, [user("three", at="2025-11-05T08:10:01Z")])
    run("import_codex", home.root)
    files = home.files()
    assert records(SEGMENTED) == files[sealed] + files[relative]
    assert [
        r["payload"].get("content", [{}])[0].get("text") for r in records(SEGMENTED) if r["type"] == "response_item"
    ] == [
        "one",
        "two",
        "three",
    ]
    # Twice more, once more rotated: still no duplicate and no hole.
    before = dump_database(runs=False)
    run("import_codex", home.root)
    assert dump_database(runs=False) == before
    home.rotate(relative, SEGMENTED, at="2025-11-05T09:00:00Z", segment="0199a300-0000-7000-8000-00000000aaaa")
    home.append(relative, [assistant("four", at="2025-11-05T09:00:01Z")])
    run("import_codex", home.root)
    assert len(records(SEGMENTED)) == sum(len(lines) for lines in home.files().values())
    out = tmp_path / "out"
    run("export_codex", "--out", out)
    assert CodexHomeBuilder(out).files() == home.files()


def test_a_history_rewritten_in_place_stops_the_run(home):
    run("import_codex", home.root)
    path = home.root / live_path(home, LIVE)
    lines = path.read_text().splitlines()
    lines[2] = json.dumps(user("something else", at="2025-10-01T10:00:01.100Z"))
    path.write_text("\n".join(lines) + "\n")
    before = dump_database(runs=False)
    with pytest.raises(CommandError, match=f"thread {LIVE} no longer begins with the {len(lines)} lines"):
        run("import_codex", home.root)
    assert dump_database(runs=False) == before


def test_a_truncated_last_line_waits_for_the_next_run(home):
    run("import_codex", home.root)
    path = home.root / live_path(home, LIVE)
    whole = json.dumps(assistant("half way", at="2025-10-01T12:00:00Z"), separators=(",", ":"))
    with path.open("a") as handle:
        handle.write(whole[:20])
    output = run("import_codex", home.root)
    count = TimelineRow.objects.filter(agent_id=LIVE).count()
    assert "a truncated last line (a write under way?), left for the next run" in output
    assert "rows:      0 created" in output
    with path.open("a") as handle:
        handle.write(whole[20:] + "\n")
    run("import_codex", home.root)
    assert TimelineRow.objects.filter(agent_id=LIVE).count() == count + 1
    assert records(LIVE)[-1] == json.loads(whole)


def test_a_thread_archived_since_the_last_run_is_archived_and_exports_where_it_now_is(home, tmp_path):
    run("import_codex", home.root)
    live = home.root / live_path(home, LIVE)
    moved = home.root / "archived_sessions" / live.name
    live.rename(moved)
    run("import_codex", home.root)
    assert AgentSnapshot.objects.get(pk=LIVE).is_archived
    out = tmp_path / "out"
    run("export_codex", "--out", out)
    assert (out / "archived_sessions" / live.name).is_file()
    assert CodexHomeBuilder(out).files() == home.files()


def test_the_export_gives_the_home_back_deep_equal(home, tmp_path):
    run("import_codex", home.root)
    out = tmp_path / "exported home"
    output = run("export_codex", "--out", out)
    assert "Wrote 4 threads: 5 rollout files" in output
    assert CodexHomeBuilder(out).files() == home.files()
    # And that export imports again into the same database as a rerun: nothing changes.
    before = dump_database(runs=False)
    run("import_codex", out)
    assert dump_database(runs=False) == before


def test_the_export_refuses_a_directory_that_holds_anything(home, tmp_path):
    run("import_codex", home.root)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="empty or new directory"):
        run("export_codex", "--out", tmp_path / "out")


def test_a_line_with_every_json_shape_comes_back_deep_equal(tmp_path):
    home = CodexHomeBuilder(tmp_path / "home")
    odd = line(
        "2025-10-01T10:00:00.5+02:00",
        "event_msg",
        {
            "type": "token_count",
            "info": {"n": 2**53 + 1, "f": 0.1, "neg": -1e-7, "nested": [None, True, {"é": "\u2028"}]},
        },
    )
    home.write(
        f"sessions/2025/10/01/{rollout_name('2025-10-01T08-00-00', LIVE)}",
        [session_meta(LIVE, "/srv/y", at="2025-10-01T08:00:00Z"), odd],
    )
    run("import_codex", home.root)
    out = tmp_path / "out"
    run("export_codex", "--out", out)
    assert CodexHomeBuilder(out).files() == home.files()


@pytest.mark.django_db(transaction=True)
def test_after_an_instance_moves_the_codex_agents_are_followed_again(home, tmp_path):
    """export_instance carries the agents and rows, not the Codex bookkeeping: the next import finds
    each Codex agent's rows to be its thread's first lines and goes on from there."""
    from registry.models import Project

    run("import_codex", home.root)
    rows_before = {agent: records(agent) for agent in (LIVE, SEGMENTED)}
    run("export_instance", tmp_path / "instance.jsonl")
    Project.objects.all().delete()
    CodexImportRun.objects.all().delete()
    run("import_instance", tmp_path / "instance.jsonl")
    assert not CodexThread.objects.exists()
    home.append(live_path(home, LIVE), [assistant("After the move.", at="2025-10-01T12:00:00Z")])
    output = run("import_codex", home.root)
    assert "rows:      1 created" in output
    assert records(LIVE)[:-1] == rows_before[LIVE]
    assert records(SEGMENTED) == rows_before[SEGMENTED]
    out = tmp_path / "out"
    run("export_codex", "--out", out)
    assert CodexHomeBuilder(out).files() == home.files()


@pytest.mark.django_db(transaction=True)
def test_a_run_that_changes_something_is_undoable_and_a_rerun_takes_no_snapshot(home, tmp_path):
    """As the legacy and Claude Code imports: a data snapshot before each run that writes, none before a
    rerun that changes nothing (it would rotate an older snapshot away for nothing)."""
    from datadir.selectors import list_data_snapshots

    def new_snapshots() -> list[str]:
        return [s.reason for s in list_data_snapshots(with_sizes=False) if s.name not in before]

    before = {snapshot.name for snapshot in list_data_snapshots(with_sizes=False)}
    first = run("import_codex", home.root)
    assert "Data snapshot before the import" in first
    assert new_snapshots() == ["pre-import"]
    rerun = run("import_codex", home.root)
    assert "Nothing to change." in rerun and "Data snapshot" not in rerun
    assert new_snapshots() == ["pre-import"]
    home.append(live_path(home, LIVE), [assistant("One more.", at="2025-10-01T12:00:00Z")])
    top_up = run("import_codex", home.root)
    assert "rows:      1 created" in top_up and "Data snapshot before the import" in top_up
    assert new_snapshots() == ["pre-import", "pre-import"]
    assert "Data snapshot" not in run("import_codex", home.root, "--dry-run")
