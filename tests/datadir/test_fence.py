"""The write fence a restore holds (DatabaseBackend.writes_held_back, kernel/db_backends/fence.py):
every transaction of another connection waits behind it, or gets UnderMaintenance (503 `maintenance`)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, transaction

import datadir.services.restore as restore_module
from datadir.backends import database_backend
from datadir.errors import SnapshotFailed
from datadir.services import restore_snapshot, take_snapshot
from kernel.errors import UnderMaintenance
from kernel.write_fence import FenceNotClosed
from registry.models import Project
from registry.services import create_project
from tests.datadir.conftest import append_rows
from tests.factories import AgentFactory
from tests.support.api import assert_error
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db(transaction=True)


def in_thread(work: Callable[[], object]) -> object:
    """Run ``work`` on a thread of its own (so on a connection of its own); its result or its exception."""
    outcome: dict[str, object] = {}

    def run():
        try:
            outcome["result"] = work()
        except BaseException as exc:
            outcome["result"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    return outcome["result"]


class Holder:
    """Holds the write fence on a thread of its own until released, like a restore in another process."""

    def __init__(self):
        self.held = threading.Event()
        self.release = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._hold)

    def _hold(self) -> None:
        try:
            with database_backend().writes_held_back():
                self.held.set()
                self.release.wait(timeout=60)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            self.held.set()
            connection.close()

    def __enter__(self) -> Holder:
        self.thread.start()
        assert self.held.wait(timeout=60)
        assert self.errors == []
        return self

    def __exit__(self, *exc_info) -> None:
        self.release.set()
        self.thread.join(timeout=60)
        assert self.errors == []


def add_project(directory: str) -> Project:
    return create_project(directory=directory, kind="git")


def test_a_transaction_is_refused_with_maintenance_while_the_fence_is_held_and_admitted_after(settings):
    settings.CHARTR_MAINTENANCE_WAIT = 0
    with Holder():
        refused = in_thread(lambda: add_project("/srv/fenced"))
        assert isinstance(refused, UnderMaintenance)
        assert (refused.code, refused.status, refused.retry_after) == ("maintenance", 503, 5)
    assert not Project.objects.filter(directory="/srv/fenced").exists()
    assert isinstance(in_thread(lambda: add_project("/srv/fenced")), Project)


def test_a_waiting_transaction_goes_through_once_the_fence_opens(settings):
    settings.CHARTR_MAINTENANCE_WAIT = 60
    holder = Holder().__enter__()
    writer = threading.Thread(target=lambda: in_thread(lambda: add_project("/srv/waited")))
    writer.start()
    order = []
    writer.join(timeout=0.5)  # the writer is still waiting: nothing was written while the fence is held
    order.append(("written while held", Project.objects.filter(directory="/srv/waited").exists()))
    holder.__exit__(None, None, None)
    writer.join(timeout=60)
    order.append(("written after", Project.objects.filter(directory="/srv/waited").exists()))
    assert order == [("written while held", False), ("written after", True)]


def test_the_holding_thread_itself_can_write():
    agent = AgentFactory(agent_id="holder")
    with database_backend().writes_held_back():
        append_rows(agent.agent_id, 2)
    assert TimelineRow.objects.filter(agent_id="holder").count() == 2


def test_closing_the_fence_waits_for_transactions_already_admitted():
    events: list[str] = []
    admitted, finish = threading.Event(), threading.Event()

    def long_write():
        with transaction.atomic():
            add_project("/srv/in-flight")
            admitted.set()
            finish.wait(timeout=60)
            events.append("writer committed")

    writer = threading.Thread(target=lambda: in_thread(long_write))
    writer.start()
    assert admitted.wait(timeout=60)
    holder = Holder()
    holder.thread.start()
    holder.held.wait(timeout=0.5)
    events.append(f"fence closed before the writer finished: {holder.held.is_set()}")
    finish.set()
    assert holder.held.wait(timeout=60)
    events.append("fence closed")
    holder.__exit__(None, None, None)
    writer.join(timeout=60)
    assert events == ["fence closed before the writer finished: False", "writer committed", "fence closed"]


def test_a_fence_that_cannot_close_in_time_says_so():
    admitted, finish = threading.Event(), threading.Event()

    def long_write():
        with transaction.atomic():
            add_project("/srv/stuck")
            admitted.set()
            finish.wait(timeout=60)

    writer = threading.Thread(target=lambda: in_thread(long_write))
    writer.start()
    try:
        assert admitted.wait(timeout=60)
        with pytest.raises(FenceNotClosed), connection.write_fence.closed(drain_seconds=0.2):
            pass
    finally:
        finish.set()
        writer.join(timeout=60)


def test_the_first_transaction_after_the_fence_opens_is_admitted_every_time(settings):
    # On PostgreSQL the restore's session used to end without releasing its lock, and the
    # server released it some time after the client had gone: a write right after was refused.
    settings.CHARTR_MAINTENANCE_WAIT = 0
    outcomes = []
    for attempt in range(20):
        with Holder():
            pass
        outcomes.append(type(in_thread(lambda attempt=attempt: add_project(f"/srv/after-{attempt}"))).__name__)
    assert outcomes == ["Project"] * 20


def test_a_write_refused_by_the_fence_is_a_503_maintenance_with_retry_after(api, settings):
    settings.CHARTR_MAINTENANCE_WAIT = 0
    with Holder():
        response = api.post("/api/v1/projects", {"directory": "/srv/api", "kind": "git"}, format="json")
    assert_error(response, 503, "maintenance")
    assert response["Retry-After"] == "5"
    assert api.post("/api/v1/projects", {"directory": "/srv/api", "kind": "git"}, format="json").status_code == 201


def test_the_pre_restore_snapshot_and_the_swap_run_with_writes_held_back(data_dir, settings, monkeypatch):
    settings.CHARTR_MAINTENANCE_WAIT = 0
    agent = AgentFactory(agent_id="fenced")
    append_rows(agent.agent_id, 2)
    good = take_snapshot()
    attempts: list[object] = []
    real_take, real_restore = restore_module.take_locked, type(database_backend()).restore

    def take_while_writing(**kwargs):
        attempts.append(in_thread(lambda: append_rows("fenced", 1)))
        return real_take(**kwargs)

    def restore_while_writing(self, checked):
        attempts.append(in_thread(lambda: append_rows("fenced", 1)))
        return real_restore(self, checked)

    monkeypatch.setattr(restore_module, "take_locked", take_while_writing)
    monkeypatch.setattr(type(database_backend()), "restore", restore_while_writing)
    result = restore_snapshot(name=good.name)
    assert [type(attempt) for attempt in attempts] == [UnderMaintenance, UnderMaintenance]
    assert TimelineRow.objects.filter(agent_id="fenced").count() == 2
    # Writes are let in again once the restore is done, and the restore can still be undone.
    append_rows("fenced", 1)
    monkeypatch.undo()
    restore_snapshot(name=result.undo_snapshot)
    assert TimelineRow.objects.filter(agent_id="fenced").count() == 2


def test_writes_held_back_turns_a_fence_that_cannot_close_into_a_snapshot_failure(monkeypatch):
    def cannot_close(**kwargs):
        raise FenceNotClosed("a write transaction was still running after 300s")

    backend = database_backend()
    monkeypatch.setattr(type(connection.write_fence), "closed", lambda self, **kwargs: cannot_close())
    with pytest.raises(SnapshotFailed, match="Could not hold writes back"), backend.writes_held_back():
        pytest.fail("the block must not run")
