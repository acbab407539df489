"""A Paseo home comes over whole: randomUUID() epochs, every row key and record key,
items the API would refuse, holes in seqs, archive state, and a report that counts everything."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid

import pytest
from django.core.management import call_command

from legacy.export import write_timeline
from legacy.problems import LegacyImportInvalid
from legacy.services import import_legacy
from registry.models import Workspace
from snapshots.models import AgentSnapshot
from tests.legacy.builders import LegacyHome, paseo_file_name, paseo_row
from tests.legacy.conftest import dump_database
from tests.timeline.live.support import Reader
from tests.timeline.live.support import db as stream_db
from tests.timeline.live.support import run as run_stream
from timeline.items import item_problems
from timeline.live.hub import Hub
from timeline.live.stream import TimelineStream
from timeline.models import EPOCH_MAX_LENGTH, TimelineHead
from timeline.writes.counters import check_counters

pytestmark = pytest.mark.django_db

APP_DIR = "/srv/app"

EPOCH = str(uuid.UUID("6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"))
ARCHIVED_AT = "2024-04-01T09:00:00.000Z"
TOOL_CALL = {"type": "tool_call", "name": "bash"}
PROJECT_EXTRA = {"projectId": "p-app", "projectKey": "github.com/me/app", "customName": None}
WORKSPACE_EXTRA = {
    "workspaceId": "w-app",
    "projectId": "p-app",
    "pinnedAt": "2024-03-05T08:00:00.000Z",
    "labels": ["ui", "urgent"],
    "topic": "the login page",
    "isPaseoOwnedWorktree": False,
}
AGENT_EXTRA = {"features": {"plan": True}, "lastError": None}


def paseo_rows() -> list[dict]:
    """Seqs 1, 2, 5, 6 (a hole at 3..4), with every row key Paseo writes."""
    rows = [
        paseo_row(1, providerMessageId="msg-1", providerTimelineItemId="pti-1", revertToken={"sha": "abc", "n": 1}),
        paseo_row(2, revertToken=None, renderHint={"collapsed": True}),
        paseo_row(5, providerMessageId="msg-5"),
        paseo_row(6, turn_id=None),
    ]
    rows[2]["item"] = dict(TOOL_CALL)
    return rows


@pytest.fixture
def whole_home(legacy_home: LegacyHome) -> LegacyHome:
    home = legacy_home
    home.project("p-app", APP_DIR, projectKey="github.com/me/app", customName=None)
    home.workspace(
        "w-app",
        "p-app",
        APP_DIR,
        pinnedAt=WORKSPACE_EXTRA["pinnedAt"],
        labels=WORKSPACE_EXTRA["labels"],
        topic=WORKSPACE_EXTRA["topic"],
        isPaseoOwnedWorktree=False,
    )
    home.workspace("w-old", "p-app", APP_DIR + "/old", archivedAt=ARCHIVED_AT)
    home.workspace("w-plain", "p-app", APP_DIR + "/plain", kind="directory", branch=None)
    home.agent("a-uuid", APP_DIR, **AGENT_EXTRA)
    home.agent("a-live-in-archive", APP_DIR + "/old", lastStatus="running")
    document = {"version": 1, "epoch": EPOCH, "rows": paseo_rows(), "nextSeq": 7}
    home.write_file(home.root / "agent-timelines" / paseo_file_name("a-uuid"), json.dumps(document))
    home.save()
    return home


def page(api, agent_id: str, **query) -> dict:
    response = api.get(f"/api/v1/agents/{agent_id}/timeline", query)
    assert response.status_code == 200, response.content
    return response.json()


def test_uuid_epochs_are_kept_and_continue_every_read(whole_home, api):
    import_legacy(source=whole_home.root)
    assert len(EPOCH) == 36 <= EPOCH_MAX_LENGTH
    assert TimelineHead.objects.get(pk="a-uuid").epoch == EPOCH
    after = page(api, "a-uuid", direction="after", seq=1, epoch=EPOCH)
    assert (after["epoch"], after["reset"], after["stale_cursor"]) == (EPOCH, False, False)
    assert [row["seq"] for row in after["rows"]] == [2, 5, 6]
    before = page(api, "a-uuid", direction="before", seq=6, epoch=EPOCH, limit=2)
    assert [row["seq"] for row in before["rows"]] == [2, 5] and not before["stale_cursor"]
    other = page(api, "a-uuid", direction="after", seq=1, epoch=str(uuid.uuid4()))
    assert other["stale_cursor"] and other["reset"]
    too_long = api.get("/api/v1/agents/a-uuid/timeline", {"epoch": "e" * (EPOCH_MAX_LENGTH + 1)})
    assert too_long.status_code == 400


def test_row_keys_come_over_and_back_out(whole_home, api):
    import_legacy(source=whole_home.root)
    rows = {row["seq"]: row for row in page(api, "a-uuid", direction="after", seq=0)["rows"]}
    assert (rows[1]["provider_message_id"], rows[1]["provider_timeline_item_id"]) == ("msg-1", "pti-1")
    assert rows[1]["revert_token"] == {"sha": "abc", "n": 1} and rows[1]["turn_id"] == "turn-1"
    assert rows[2]["revert_token"] is None and rows[2]["extra"] == {"renderHint": {"collapsed": True}}
    assert rows[6]["turn_id"] is None and rows[6]["extra"] == {}
    # The export tells a null token (kept) from none (left out).
    out = io.StringIO()
    write_timeline(agent_id="a-uuid", out=out)
    header, *exported = [json.loads(line) for line in out.getvalue().splitlines()]
    assert header["epoch"] == EPOCH
    by_seq = {row["seq"]: row for row in exported}
    assert by_seq[2]["revert_token"] is None and "revert_token" not in by_seq[5]
    assert by_seq[2]["extra"] == {"renderHint": {"collapsed": True}}


def test_an_export_holds_every_key_of_every_paseo_row(whole_home):
    """Field by field: each row as Paseo wrote it against the export's line for it."""
    import_legacy(source=whole_home.root)
    out = io.StringIO()
    write_timeline(agent_id="a-uuid", out=out)
    _, *exported = [json.loads(line) for line in out.getvalue().splitlines()]
    names = {
        "turnId": "turn_id",
        "providerMessageId": "provider_message_id",
        "providerTimelineItemId": "provider_timeline_item_id",
        "revertToken": "revert_token",
    }
    assert [row["seq"] for row in exported] == [row["seq"] for row in paseo_rows()]
    for original, line in zip(paseo_rows(), exported, strict=True):
        item = line["item"]["item"] if line["item"]["type"] == "legacy_item" else line["item"]
        assert item == original["item"]
        assert dt.datetime.fromisoformat(line["committed_at"]) == dt.datetime.fromisoformat(original["timestamp"])
        for key, value in original.items():
            if key in names:
                assert line[names[key]] == value, key
            elif key not in ("seq", "timestamp", "item"):
                assert line["extra"][key] == value, key
        assert set(line) - {"seq", "committed_at", "item_id", "item", "extra"} == {
            names[key] for key in original if key in names
        }


def test_record_keys_chartr_does_not_model_are_kept_read_only(whole_home, api):
    report = import_legacy(source=whole_home.root)
    workspace = Workspace.objects.get(directory=APP_DIR)
    project = api.get(f"/api/v1/projects/{workspace.project_id}").json()
    assert project["extra"] == PROJECT_EXTRA
    assert api.get(f"/api/v1/workspaces/{workspace.pk}").json()["extra"] == WORKSPACE_EXTRA
    assert api.get("/api/v1/agents/a-uuid").json()["extra"] == AGENT_EXTRA
    assert report.extra_keys["workspaces"]["pinnedAt"] == 1 and report.extra_keys["workspaces"]["topic"] == 1
    assert report.extra_keys["agents"]["features"] == 1
    assert report.extra_keys["timeline_rows"] == {"renderHint": 1}
    refused = api.patch(f"/api/v1/workspaces/{workspace.pk}", {"extra": {"topic": "x"}}, format="json")
    assert refused.status_code == 400
    assert Workspace.objects.get(pk=workspace.pk).extra == WORKSPACE_EXTRA


def test_an_item_the_api_would_refuse_is_stored_as_a_legacy_item(whole_home, api):
    report = import_legacy(source=whole_home.root)
    (row,) = page(api, "a-uuid", direction="after", seq=4, limit=1)["rows"]
    assert row["item_type"] == "legacy_item" and row["item"]["item"] == TOOL_CALL
    assert row["item"]["problems"] == item_problems(TOOL_CALL) != []
    assert item_problems(row["item"]) == []
    (line,) = report.normalised_items
    assert paseo_file_name("a-uuid") in line and "seq 5" in line


def test_a_hole_is_imported_reported_and_read_across(whole_home, api):
    report = import_legacy(source=whole_home.root)
    (hole,) = report.holes
    assert paseo_file_name("a-uuid") in hole and "seqs 3..4" in hole
    head = TimelineHead.objects.get(pk="a-uuid")
    assert (head.min_seq, head.head_seq, head.committed_rows) == (1, 6, 4)
    assert check_counters(repair=False) == []
    whole = page(api, "a-uuid", direction="after", seq=0)
    assert [row["seq"] for row in whole["rows"]] == [1, 2, 5, 6] and whole["holes"] == [[3, 4]]
    assert page(api, "a-uuid", direction="after", seq=2, limit=1)["holes"] == [[3, 4]]
    assert page(api, "a-uuid", direction="after", seq=4, limit=1)["holes"] == []
    assert page(api, "a-uuid", direction="before", seq=5, limit=1)["holes"] == [[3, 4]]
    assert page(api, "a-uuid", limit=2)["holes"] == []


@stream_db
def test_the_stream_goes_across_a_hole(whole_home):
    import_legacy(source=whole_home.root)

    async def scenario(hub: Hub):
        reader = Reader(TimelineStream(hub, "a-uuid", after_seq=0, epoch=EPOCH))
        kind, data, _ = await reader.next()
        assert (kind, data["reason"], data["epoch"]) == ("agent", "snapshot", EPOCH)
        assert await reader.committed_seqs(4) == [1, 2, 5, 6]
        await reader.close()

    run_stream(scenario)


def test_a_live_agent_in_an_archived_workspace_is_archived_with_it(whole_home, api):
    report = import_legacy(source=whole_home.root)
    workspace = Workspace.objects.get(directory=APP_DIR + "/old")
    agent = AgentSnapshot.objects.get(pk="a-live-in-archive")
    assert workspace.archived_at is not None and agent.archived_at == workspace.archived_at
    assert agent.archive_operation == workspace.archive_operation and agent.lifecycle == "closed"
    assert report.archived_with_workspace == ["a-live-in-archive"]
    assert any("a-live-in-archive" in warning and "archived with it" in warning for warning in report.warnings)


def test_the_rows_of_a_refused_history_count_as_skipped(whole_home):
    whole_home.agent("a-bad", APP_DIR)
    rows = [paseo_row(3), paseo_row(2), paseo_row(4)]  # seqs that do not ascend
    document = {"version": 1, "epoch": str(uuid.uuid4()), "rows": rows}
    whole_home.write_file(whole_home.root / "agent-timelines" / paseo_file_name("a-bad"), json.dumps(document))
    with pytest.raises(LegacyImportInvalid):
        import_legacy(source=whole_home.root)
    report = import_legacy(source=whole_home.root, skip_invalid=True)
    assert report.counts["timeline_rows"].skipped == 3
    assert report.counts["timeline_rows"].created == 4


def test_a_rerun_changes_nothing_and_a_dry_run_leaves_nothing(whole_home):
    dry = import_legacy(source=whole_home.root, dry_run=True)
    assert dump_database()["snapshots.AgentSnapshot"] == []
    first = import_legacy(source=whole_home.root)
    assert dry.counts_dict() == first.counts_dict()
    assert (dry.holes, dry.normalised_items, dry.extra_keys) == (first.holes, first.normalised_items, first.extra_keys)
    before = dump_database()
    again = import_legacy(source=whole_home.root)
    assert again.total("created") == again.total("updated") == 0
    after = dump_database()
    after.pop("legacy.ImportRun")
    before.pop("legacy.ImportRun")
    assert after == before


def test_an_exported_home_holds_every_key_of_every_record(whole_home, tmp_path):
    """Field by field: each record as Paseo wrote it against the exported one."""
    import_legacy(source=whole_home.root)
    out = tmp_path / "exported"
    call_command("export_timeline", "--home", str(out), stderr=io.StringIO())
    projects = {r["projectId"]: r for r in json.loads((out / "projects" / "projects.json").read_text())}
    workspaces = {r["workspaceId"]: r for r in json.loads((out / "projects" / "workspaces.json").read_text())}
    agents = {path.stem: json.loads(path.read_text()) for path in (out / "agents").rglob("*.json")}
    originals = [
        *[(projects, r["projectId"], r) for r in whole_home.projects],
        *[(workspaces, r["workspaceId"], r) for r in whole_home.workspaces],
        *[(agents, path.stem, json.loads(path.read_text())) for path in (whole_home.root / "agents").rglob("*.json")],
    ]
    for exported, key, original in originals:
        record = exported[key]
        # What the import changes on purpose: a live agent in an archived workspace is archived
        # with it, and an agent's activity times follow the rows its history brought.
        changed = {"a-live-in-archive": {"lastStatus", "archivedAt"}, "a-uuid": {"lastActivityAt"}}.get(key, set())
        for name, value in original.items():
            if name not in changed:
                assert record[name] == value, (key, name)
