"""manage.py trim_timeline: the oldest rows go, seqs stay, min_seq moves up, a pre-trim snapshot undoes it."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from datadir.services import restore_snapshot
from tests.datadir.conftest import database_state, snapshot_dirs
from tests.factories import AgentFactory
from timeline.models import TimelineHead, TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items
from timeline.writes.counters import check_counters
from timeline.writes.pruning import TrimPolicy, trim_timeline

pytestmark = pytest.mark.django_db(transaction=True)


def trim(*args) -> str:
    out = io.StringIO()
    call_command("trim_timeline", *args, stdout=out)
    return out.getvalue()


def grow(agent_id: str, rows: int) -> None:
    AgentFactory(agent_id=agent_id)
    items = [NewTimelineItem(item={"type": "user_message", "text": f"{agent_id} row {n}"}) for n in range(1, rows + 1)]
    append_timeline_items(agent_id=agent_id, items=items)


def seqs(agent_id: str) -> list[int]:
    return list(TimelineRow.objects.filter(agent_id=agent_id).order_by("seq").values_list("seq", flat=True))


def test_keep_10_of_50_then_read_gap_and_append(api, data_dir):
    grow("a1", 50)
    out = trim("a1", "--keep", "10")
    assert "a1: removed 40 rows" in out and "first retained seq now 41" in out
    assert seqs("a1") == list(range(41, 51))
    page = api.get("/api/v1/agents/a1/timeline", {"direction": "after", "seq": 5}).json()
    assert page["window"] == {"min_seq": 41, "max_seq": 50, "next_seq": 51}
    assert (page["gap"], page["reset"]) == (True, True)
    assert [row["seq"] for row in page["rows"]][:1] == [41]
    appended = api.post(
        "/api/v1/agents/a1/timeline", {"items": [{"item": {"type": "user_message", "text": "next"}}]}, format="json"
    )
    assert [row["seq"] for row in appended.json()["rows"]] == [51]
    assert check_counters(repair=False) == [], "the counters moved with the rows"
    [snapshot] = snapshot_dirs(data_dir)
    assert '"reason": "pre-trim"' in (data_dir / "snapshots" / snapshot / "manifest.json").read_text()


def test_trimming_again_changes_nothing_and_takes_no_snapshot(data_dir):
    grow("a1", 20)
    trim("a1", "--keep", "5")
    assert trim("a1", "--keep", "5") == "Nothing to trim.\n"
    assert trim("a1", "--keep", "50") == "Nothing to trim.\n", "a trim never brings rows back"
    assert len(snapshot_dirs(data_dir)) == 1


def test_before_seq_and_older_than(data_dir):
    grow("a1", 10)
    trim("a1", "--before-seq", "4")
    assert seqs("a1") == list(range(4, 11))
    old = timezone.now() - dt.timedelta(days=40)
    TimelineRow.objects.filter(agent_id="a1", seq__lte=6).update(committed_at=old)
    trim("a1", "--older-than", "30")
    assert seqs("a1") == [7, 8, 9, 10]
    trim("a1", "--older-than", "0")
    assert seqs("a1") == [] and TimelineHead.objects.get(pk="a1").min_seq == 11


def test_all_agents_and_small_batches(data_dir):
    grow("a1", 30)
    grow("a2", 3)
    out = trim("--all-agents", "--keep", "5")
    assert "a1: removed 25 rows" in out and "a2" not in out
    assert seqs("a1") == list(range(26, 31)) and seqs("a2") == [1, 2, 3]
    result = trim_timeline(agent_id="a1", policy=TrimPolicy(keep=1), batch_size=2)
    assert (result.rows, result.min_seq) == (4, 30)
    assert check_counters(repair=False) == []


def test_dry_run_counts_and_changes_nothing(data_dir):
    grow("a1", 12)
    before = database_state()
    out = trim("a1", "--keep", "2", "--dry-run")
    assert "a1: 10 rows" in out
    assert database_state() == before and snapshot_dirs(data_dir) == []


def test_restoring_the_pre_trim_snapshot_brings_the_rows_back(data_dir):
    grow("a1", 8)
    trim("a1", "--keep", "3")
    [snapshot] = snapshot_dirs(data_dir)
    restore_snapshot(name=snapshot)
    assert seqs("a1") == list(range(1, 9)) and TimelineHead.objects.get(pk="a1").min_seq == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a1", "--all-agents", "--keep", "1"], "Name one AGENT_ID, or give --all-agents"),
        (["--keep", "1"], "Name one AGENT_ID, or give --all-agents"),
        (["a1", "--keep", "-1"], "keep is 0 or more"),
        (["a1", "--before-seq", "0"], "before_seq is 1 or more"),
        (["a1", "--older-than", "-2"], "0 or more days"),
        (["missing", "--keep", "1"], "Agent missing does not exist"),
    ],
)
def test_bad_arguments_are_clear_errors(data_dir, args, message):
    AgentFactory(agent_id="a1")
    with pytest.raises(CommandError, match=message):
        trim(*args)


def test_a_trim_is_refused_when_it_could_not_be_undone(data_dir, settings):
    grow("a1", 5)
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    with pytest.raises(CommandError, match="could not be undone"):
        trim("a1", "--keep", "1")
    assert seqs("a1") == [1, 2, 3, 4, 5]
