from __future__ import annotations

import datetime as dt
import json
import shutil
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from legacy.services import import_legacy
from registry.models import Project
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db


def export(*args) -> str:
    out, err = StringIO(), StringIO()
    call_command("export_timeline", *args, stdout=out, stderr=err)
    return out.getvalue()


def add_rows(agent: AgentSnapshot, items: list[tuple[str | None, dict]]) -> None:
    start = agent.timeline_head.head_seq
    base = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    TimelineRow.objects.bulk_create(
        TimelineRow(
            agent=agent,
            seq=start + n,
            committed_at=base + dt.timedelta(seconds=n, microseconds=n),
            item_type=item["type"],
            item=item,
            item_id=item_id,
        )
        for n, (item_id, item) in enumerate(items, 1)
    )
    TimelineHead.objects.filter(pk=agent.pk).update(head_seq=start + len(items))


def all_timelines() -> dict:
    return {
        agent.agent_id: (
            agent.timeline_head.epoch,
            agent.timeline_head.head_seq,
            list(
                TimelineRow.objects.filter(agent=agent)
                .order_by("seq")
                .values_list("seq", "committed_at", "item_id", "item_type", "item")
            ),
        )
        for agent in AgentSnapshot.objects.order_by("agent_id")
    }


class TestExport:
    def test_one_agent_to_stdout(self):
        agent = AgentFactory(agent_id="a1")
        add_rows(
            agent, [("m-1", {"type": "user_message", "text": "héllo"}), (None, {"type": "tool", "n": [1.5, None]})]
        )
        lines = export("a1").splitlines()
        header = json.loads(lines[0])
        assert header["type"] == "chartr.timeline" and header["version"] == 1
        assert (header["agent_id"], header["epoch"]) == ("a1", agent.timeline_head.epoch)
        dt.datetime.fromisoformat(header["exported_at"])
        assert [json.loads(line) for line in lines[1:]] == [
            {
                "seq": 1,
                "committed_at": "2024-05-01T12:00:01.123457+00:00",
                "item_id": "m-1",
                "item": {"type": "user_message", "text": "héllo"},
            },
            {
                "seq": 2,
                "committed_at": "2024-05-01T12:00:02.123458+00:00",
                "item_id": None,
                "item": {"type": "tool", "n": [1.5, None]},
            },
        ]

    def test_to_a_file_in_batches(self, tmp_path, monkeypatch):
        from legacy import export as export_module

        monkeypatch.setattr(export_module, "EXPORT_BATCH", 2)
        agent = AgentFactory(agent_id="a1")
        add_rows(agent, [(f"i{n}", {"type": "t", "n": n}) for n in range(5)])
        target = tmp_path / "out dir ü" / "a1.jsonl"
        target.parent.mkdir()
        export("a1", "--out", str(target))
        rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()[1:]]
        assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
        assert [p.name for p in target.parent.iterdir()] == ["a1.jsonl"]  # no temp file left

    def test_all_agents_to_a_directory(self, tmp_path):
        first = AgentFactory(agent_id="a1")
        add_rows(first, [("x", {"type": "t"})])
        AgentFactory(agent_id="b2")  # an empty timeline still gets its header (and epoch)
        export("--all", "--out-dir", str(tmp_path / "out"))
        files = sorted(p.name for p in (tmp_path / "out").iterdir())
        assert files == ["a1.jsonl", "b2.jsonl"]
        assert len((tmp_path / "out" / "a1.jsonl").read_text().splitlines()) == 2
        empty = (tmp_path / "out" / "b2.jsonl").read_text().splitlines()
        assert len(empty) == 1 and json.loads(empty[0])["agent_id"] == "b2"

    @pytest.mark.parametrize(
        "args, message",
        [
            (["missing"], "Agent missing does not exist."),
            ([], "Give an AGENT_ID, or --all --out-dir DIR."),
            (["--all"], "--all needs --out-dir DIR."),
            (["a1", "--all", "--out-dir", "x"], "--all takes --out-dir DIR"),
            (["a1", "--out-dir", "x"], "--out-dir goes with --all"),
        ],
    )
    def test_bad_arguments(self, args, message):
        with pytest.raises(CommandError, match=message):
            export(*args)


class TestRoundTrip:
    def test_export_then_import_into_an_empty_database_reproduces_every_timeline(self, quirks_home, tmp_path):
        import_legacy(source=quirks_home.root)
        # Give one agent rows committed by chartr itself (not from the legacy files).
        add_rows(AgentSnapshot.objects.get(pk="a-stale"), [("z", {"type": "note", "deep": {"a": [1, {"b": "ç"}]}})])
        original = all_timelines()
        assert sum(len(rows) for _, _, rows in original.values()) == 9

        exported = tmp_path / "exported"
        shutil.copytree(quirks_home.root / "projects", exported / "projects")
        shutil.copytree(quirks_home.root / "agents", exported / "agents")
        export("--all", "--out-dir", str(exported / "timelines"))

        Project.objects.all().delete()  # cascades to workspaces, agents and rows
        assert not AgentSnapshot.objects.exists() and not TimelineRow.objects.exists()
        report = import_legacy(source=exported)

        assert report.counts["timeline_rows"].created == 9
        assert all_timelines() == original
