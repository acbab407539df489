"""Restoring a data snapshot (datadir.services.restore): exact state back, undoable, new epochs."""

from __future__ import annotations

import pytest

from datadir.services import restore_snapshot, take_snapshot
from snapshots.models import AgentSnapshot
from snapshots.signals import agents_changed
from tests.datadir.conftest import (
    append_rows,
    build_state,
    database_state,
    epochs,
    file_state,
    mutate_state,
    snapshot_dirs,
)
from tests.factories import AgentFactory
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db(transaction=True)


def test_restore_then_restore_the_pre_restore_snapshot_returns_exactly(data_dir):
    workspace, _ = build_state(data_dir)
    good = take_snapshot()
    state_a, files_a, epochs_a = database_state(), file_state(data_dir), epochs()

    mutate_state(data_dir, workspace)
    state_b, files_b, epochs_b = database_state(), file_state(data_dir), epochs()
    assert state_b != state_a and files_b != files_a

    result = restore_snapshot(name=good.name)
    assert result.restored == good.name and result.undo_snapshot not in (None, good.name)
    assert result.agents_with_new_epoch == 3
    assert database_state() == state_a
    assert file_state(data_dir) == files_a
    epochs_restored = epochs()
    assert set(epochs_restored) == set(epochs_a)
    assert all(epochs_restored[agent] != epochs_a[agent] for agent in epochs_a)
    assert len(set(epochs_restored.values())) == 3  # a fresh value per agent

    undo = restore_snapshot(name=result.undo_snapshot)
    assert database_state() == state_b
    assert file_state(data_dir) == files_b
    epochs_undone = epochs()
    assert set(epochs_undone) == set(epochs_b)
    assert all(epochs_undone[a] != epochs_b[a] and epochs_undone[a] != epochs_restored.get(a) for a in epochs_b)
    # Each restore left its own pre-restore snapshot behind.
    assert undo.undo_snapshot in snapshot_dirs(data_dir)
    assert len(snapshot_dirs(data_dir)) == 3


def test_restore_without_a_name_restores_the_newest(data_dir):
    build_state(data_dir)
    take_snapshot()
    append_rows("a0", 3)
    newest = take_snapshot()
    append_rows("a0", 3)
    result = restore_snapshot()
    assert result.restored == newest.name
    assert TimelineHead.objects.get(pk="a0").head_seq == 7
    assert TimelineRow.objects.filter(agent_id="a0").count() == 7


def test_after_a_restore_every_epoch_changes_and_old_cursors_no_longer_match(data_dir):
    build_state(data_dir)
    snap = take_snapshot()
    # A client's cursor: (agent, epoch, seq) as read before the restore.
    cursors = {a.agent_id: (a.timeline_head.epoch, a.timeline_head.head_seq) for a in AgentSnapshot.objects.all()}
    append_rows("a0", 10)
    received = []
    agents_changed.connect(lambda **kw: received.append(kw), weak=False, dispatch_uid="test-restore-signal")
    try:
        restore_snapshot(name=snap.name)
    finally:
        agents_changed.disconnect(dispatch_uid="test-restore-signal")
    for agent in AgentSnapshot.objects.all():
        held_epoch, _ = cursors[agent.agent_id]
        assert agent.timeline_head.epoch != held_epoch
        assert TimelineHead.objects.filter(pk=agent.agent_id, epoch=held_epoch).count() == 0
    assert len(received) == 1 and received[0]["reason"] == "restore"
    assert sorted(received[0]["agent_ids"]) == ["a0", "a1", "a2"]


def test_restoring_with_keep_one_keeps_the_restored_snapshot(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 1
    build_state(data_dir)
    snap = take_snapshot()
    result = restore_snapshot(name=snap.name)
    # The pre-restore snapshot must not rotate away the one being restored.
    assert snapshot_dirs(data_dir) == sorted([snap.name, result.undo_snapshot])


def test_a_client_resuming_with_a_cursor_from_before_the_restore_gets_reset(data_dir):
    from rest_framework.test import APIClient

    from tokens.services import create_api_token

    _, raw = create_api_token(name="datadir-test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    agent = AgentFactory(agent_id="cursor-agent")
    url = f"/api/v1/agents/{agent.pk}/timeline"
    items = [{"item": {"type": "user_message", "text": f"m{n}"}} for n in range(3)]
    assert api.post(url, {"items": items}, format="json").status_code == 201
    snap = take_snapshot()
    assert api.post(url, {"items": items}, format="json").status_code == 201
    # The client has read up to seq 6 under the current epoch.
    page = api.get(url, {"direction": "after", "seq": 0}).json()
    cursor_epoch, cursor_seq = page["epoch"], page["rows"][-1]["seq"]
    assert (cursor_seq, page["reset"]) == (6, False)

    restore_snapshot(name=snap.name)

    resumed = api.get(url, {"direction": "after", "seq": cursor_seq, "epoch": cursor_epoch}).json()
    assert resumed["reset"] is True and resumed["epoch"] != cursor_epoch
    assert [row["seq"] for row in resumed["rows"]] == [1, 2, 3] and resumed["window"]["next_seq"] == 4
