"""Writers of one process take turns on SQLite before BEGIN IMMEDIATE (kernel/db_backends/sqlite3/writer_turns.py).

The turn is a first-in first-out lock per database; the backend gives it back
however a transaction ends. One test per way a transaction can end checks that
the turn is free afterwards, so no ending can leave every other writer of the
process waiting.
"""

from __future__ import annotations

import gc
import sqlite3
import threading
from collections.abc import Callable

import pytest
from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.utils import timezone

from kernel.db_backends.sqlite3 import writer_turns as writer_turns_module
from kernel.db_backends.sqlite3.writer_turns import WriterTurns
from kernel.errors import UnderMaintenance
from registry.models import Project
from tests.support.processes import wait_for
from timeline.models import TimelineRow


def run_on_thread(work: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=work)
    thread.start()
    return thread


# --- the lock itself ----------------------------------------------------------


def test_the_turn_goes_to_the_waiters_in_arrival_order():
    turns = WriterTurns()
    assert turns.take(timeout=1)
    order: list[int] = []

    def waiter(index: int) -> None:
        assert turns.take(timeout=30)
        order.append(index)
        turns.give_back()

    threads = []
    for index in range(6):
        threads.append(run_on_thread(lambda index=index: waiter(index)))
        wait_for(lambda index=index: turns.waiting == index + 1, timeout=10, what=f"waiter {index} to queue")
    turns.give_back()
    for thread in threads:
        thread.join(timeout=30)
    assert order == [0, 1, 2, 3, 4, 5]
    assert turns.holder is None and turns.waiting == 0


def test_a_waiter_gives_up_after_its_timeout_and_leaves_the_queue():
    turns = WriterTurns()
    assert turns.take(timeout=1)
    outcome: list[bool] = []
    run_on_thread(lambda: outcome.append(turns.take(timeout=0.05))).join(timeout=10)
    assert outcome == [False]
    assert turns.waiting == 0 and turns.holder is threading.current_thread()


def test_the_turn_of_a_thread_that_died_holding_it_passes_on(monkeypatch):
    monkeypatch.setattr(writer_turns_module, "HOLDER_CHECK_SECONDS", 0.01)
    turns = WriterTurns()
    run_on_thread(lambda: turns.take(timeout=1)).join(timeout=10)
    assert turns.take(timeout=30)
    assert turns.holder is threading.current_thread()


# --- the backend: every way a transaction ends gives the turn back --------------

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="writer turns are SQLite's")
pytestmark_db = pytest.mark.django_db(transaction=True)


@pytest.fixture
def turns() -> WriterTurns:
    return connections["default"].writer_turns


def add_project(name: str) -> None:
    Project.objects.create(directory=f"/srv/turns/{name}", display_name=name, kind="git")


def assert_turn_free(turns: WriterTurns) -> None:
    assert turns.holder is None and turns.waiting == 0
    assert connections["default"].held_writer_turn is None
    # And another thread of the process writes at once, its busy timeout at zero.
    errors: list[BaseException] = []

    def write() -> None:
        try:
            connections["default"].ensure_connection()
            connections["default"].connection.execute("PRAGMA busy_timeout = 0")
            with transaction.atomic():
                add_project(f"after-{threading.get_ident()}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    run_on_thread(write).join(timeout=30)
    assert errors == []


@sqlite_only
@pytestmark_db
def test_commit_gives_the_turn_back(turns):
    with transaction.atomic():
        assert turns.holder is threading.current_thread()
        add_project("committed")
    assert_turn_free(turns)
    assert Project.objects.filter(display_name="committed").exists()


@sqlite_only
@pytestmark_db
def test_rollback_gives_the_turn_back(turns):
    with pytest.raises(RuntimeError), transaction.atomic():
        add_project("rolled-back")
        raise RuntimeError("give up")
    assert_turn_free(turns)
    assert not Project.objects.filter(display_name="rolled-back").exists()


@sqlite_only
@pytestmark_db
def test_closing_the_connection_inside_a_transaction_gives_the_turn_back(turns):
    with transaction.atomic():
        add_project("closed")
        connection.close()
        assert turns.holder is None, "the turn goes back with the connection, not at the end of the block"
    assert_turn_free(turns)
    assert not Project.objects.filter(display_name="closed").exists()


@sqlite_only
@pytestmark_db
def test_a_begin_that_waited_out_the_busy_timeout_gives_the_turn_back(turns, settings):
    other_process = sqlite3.connect(settings.DATABASES["default"]["NAME"], isolation_level=None)
    other_process.execute("BEGIN IMMEDIATE")
    impatient = connections["default"].copy()
    impatient.settings_dict["OPTIONS"]["timeout"] = 0.05
    try:
        with pytest.raises(OperationalError, match="database is locked"):
            impatient.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)
        assert impatient.held_writer_turn is None
    finally:
        other_process.execute("ROLLBACK")
        other_process.close()
        impatient.close()
    assert_turn_free(turns)


@sqlite_only
@pytestmark_db
def test_a_begin_the_write_fence_refuses_gives_the_turn_back(turns, monkeypatch, settings):
    settings.CHARTR_MAINTENANCE_WAIT = 0
    monkeypatch.setattr(type(connections["default"]).write_fence_class, "admits", lambda self: False)
    with pytest.raises(UnderMaintenance), transaction.atomic():
        add_project("fenced")
    monkeypatch.undo()
    assert_turn_free(turns)


@sqlite_only
@pytestmark_db
def test_a_commit_that_fails_gives_the_turn_back(turns):
    with pytest.raises(IntegrityError), transaction.atomic():
        # Foreign keys are checked at COMMIT: this COMMIT fails.
        TimelineRow.objects.create(
            agent_id="no-such-agent", seq=1, committed_at=timezone.now(), item_type="x", item={"type": "x"}
        )
    assert_turn_free(turns)


@sqlite_only
@pytestmark_db
def test_a_thread_that_died_inside_a_transaction_does_not_keep_the_turn(turns, monkeypatch):
    monkeypatch.setattr(writer_turns_module, "HOLDER_CHECK_SECONDS", 0.01)

    def begin_and_die() -> None:
        abandoned = connections["default"].copy()
        abandoned.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)

    run_on_thread(begin_and_die).join(timeout=10)
    gc.collect()  # the abandoned connection is closed once collected, and SQLite rolls its transaction back
    with transaction.atomic():
        add_project("after-the-dead")
    assert_turn_free(turns)


@sqlite_only
@pytestmark_db
def test_writers_of_one_process_never_meet_at_the_busy_handler():
    """With SQLite's busy timeout at zero, any two threads colliding in BEGIN IMMEDIATE would fail at once."""
    threads, transactions = 6, 25
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def writer(worker: int) -> None:
        try:
            connections["default"].ensure_connection()
            connections["default"].connection.execute("PRAGMA busy_timeout = 0")
            start.wait()
            for n in range(transactions):
                with transaction.atomic():
                    add_project(f"w{worker}-{n}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [run_on_thread(lambda worker=worker: writer(worker)) for worker in range(threads)]
    for thread in workers:
        thread.join(timeout=120)
    assert errors == []
    assert Project.objects.filter(directory__startswith="/srv/turns/w").count() == threads * transactions
