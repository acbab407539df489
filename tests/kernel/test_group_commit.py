"""kernel.group_commit with real threads on the real database (SQLite or PostgreSQL).

Each caller runs on a thread of its own, with its own connection, as the
server's pool threads do. To make a batch form for sure, a first caller is held
inside its work (its transaction open) until the others have queued behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from kernel.errors import UnderMaintenance
from kernel.group_commit import GroupCommit
from registry.models import Project
from tests.support.processes import wait_for
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db(transaction=True)


def add_project(name: str) -> int:
    with transaction.atomic():
        return Project.objects.create(directory=f"/srv/gc/{name}", display_name=name, kind="git").pk


def stored_names() -> set[str]:
    return set(Project.objects.values_list("display_name", flat=True))


class Callers:
    """Callers of one GroupCommit, each on its own thread; their outcomes by name."""

    def __init__(self, group: GroupCommit):
        self.group = group
        self.threads: list[threading.Thread] = []
        self.results: dict[str, object] = {}
        self.errors: dict[str, BaseException] = {}
        #: Per caller, whatever its work saw while it ran.
        self.seen: dict[str, dict] = {}
        self.on_answer: Callable[[str], None] | None = None

    def start(
        self, name: str, work: Callable[[], object] | None = None, *, lane=None, weight: int = 1, savepoint: bool = True
    ) -> None:
        work = work or (lambda: add_project(name))

        def observed():
            self.seen[name] = {
                "thread": threading.get_ident(),
                "in_atomic_block": transaction.get_connection().in_atomic_block,
            }
            return work()

        def caller():
            try:
                self.results[name] = self.group.run(observed, lane=lane, weight=weight, savepoint=savepoint)
            except BaseException as exc:
                self.errors[name] = exc
            finally:
                if self.on_answer is not None:
                    self.on_answer(name)
                connections.close_all()

        thread = threading.Thread(target=caller, name=f"caller-{name}")
        self.threads.append(thread)
        thread.start()

    def hold(self, name: str = "held", *, lane=None) -> threading.Event:
        """Start a caller whose work waits, inside its transaction, until the returned event is set."""
        started, release = threading.Event(), threading.Event()

        def held():
            with transaction.atomic():
                started.set()
                assert release.wait(30)
                return add_project(name)

        self.start(name, held, lane=lane)
        assert started.wait(30)
        return release

    def queue(self, names: list[str], *, lane=None, **kwargs) -> None:
        """Start callers one by one, each queued before the next starts (so they queue in this order)."""
        for name in names:
            self.start_queued(name, lane=lane, **kwargs)

    def start_queued(self, name: str, work: Callable[[], object] | None = None, *, lane=None, **kwargs) -> None:
        """Start a caller and wait until it has queued on ``lane`` (behind a held one)."""
        before = self.group.queued(lane)
        self.start(name, work, lane=lane, **kwargs)
        wait_for(lambda: self.group.queued(lane) > before, timeout=30, what=f"{name} to queue")

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in self.threads), "a caller never got its answer"

    def batches(self, names: list[str]) -> list[set[str]]:
        """The callers grouped by the thread their work ran on."""
        by_thread: dict[int, set[str]] = {}
        for name in names:
            by_thread.setdefault(self.seen[name]["thread"], set()).add(name)
        return sorted(by_thread.values(), key=sorted)


@pytest.fixture
def commits(monkeypatch):
    """Every COMMIT of the test, in order: (thread ident,), counted on the connection class."""
    made: list[int] = []
    real = type(connections["default"]).commit

    def commit(self):
        real(self)
        made.append(threading.get_ident())

    monkeypatch.setattr(type(connections["default"]), "commit", commit)
    return made


def test_calls_queued_behind_a_running_batch_commit_together_each_in_a_savepoint(commits):
    callers = Callers(GroupCommit())
    release = callers.hold()
    callers.queue(["a", "b", "c", "d"])
    assert commits == [], "nothing committed while the first transaction is held open"
    release.set()
    callers.join()

    assert not callers.errors
    assert stored_names() == {"held", "a", "b", "c", "d"}
    assert callers.batches(["a", "b", "c", "d"]) == [{"a", "b", "c", "d"}]
    assert len(commits) == 2, "the lone first call, then one transaction for the four queued behind it"
    assert callers.seen["held"]["in_atomic_block"] is False, "a lone call runs in a transaction of its own"
    assert all(callers.seen[name]["in_atomic_block"] for name in "abcd"), "queued calls run in the batch's savepoints"


def test_a_failing_call_takes_back_only_its_own_writes_and_gets_its_own_error():
    callers = Callers(GroupCommit())
    release = callers.hold()

    def fails():
        add_project("failed")
        raise ValueError("this call gives up")

    callers.queue(["a"])
    callers.start_queued("failing", fails)
    callers.queue(["b"])
    release.set()
    callers.join()

    assert stored_names() == {"held", "a", "b"}
    assert set(callers.errors) == {"failing"} and str(callers.errors["failing"]) == "this call gives up"
    assert callers.batches(["a", "failing", "b"]) == [{"a", "failing", "b"}]


def test_no_caller_has_its_answer_before_the_commit_returned(monkeypatch):
    answered, committed = threading.Event(), threading.Event()
    real = type(connections["default"]).commit

    def slow_commit(self):
        # A group commit that answered early would let a caller through during this pause.
        answered.wait(0.3)
        real(self)
        if threading.current_thread().name != "caller-held":
            committed.set()  # the batch's COMMIT, not the held call's own

    callers = Callers(GroupCommit())
    release = callers.hold()
    callers.queue(["a", "b", "c"])
    commit_was_done_at_answer: dict[str, bool] = {}

    def on_answer(name: str) -> None:
        commit_was_done_at_answer[name] = committed.is_set()
        answered.set()

    callers.on_answer = on_answer
    monkeypatch.setattr(type(connections["default"]), "commit", slow_commit)
    release.set()
    callers.join()
    assert not callers.errors
    assert {name: commit_was_done_at_answer[name] for name in "abc"} == {"a": True, "b": True, "c": True}


def test_commit_hooks_run_once_per_committed_call_after_the_commit():
    heard: list[tuple[str, int, bool]] = []

    def with_hook(name: str, fail: bool = False):
        def work():
            add_project(name)
            transaction.on_commit(
                lambda: heard.append((name, threading.get_ident(), not transaction.get_connection().in_atomic_block))
            )
            if fail:
                raise ValueError(name)

        return work

    callers = Callers(GroupCommit())
    release = callers.hold()
    for name, fail in (("a", False), ("failing", True), ("b", False)):
        callers.start_queued(name, with_hook(name, fail))
    release.set()
    callers.join()

    assert sorted(name for name, _, _ in heard) == ["a", "b"], "once per committed call, none for the failed one"
    assert all(ended for _, _, ended in heard), "hooks run once the batch's transaction has ended"
    assert {thread for _, thread, _ in heard} == {callers.seen["a"]["thread"]}, "on the batch's leader"


def test_a_begin_the_write_fence_refuses_reaches_every_call_of_the_batch(monkeypatch, settings):
    settings.CHARTR_MAINTENANCE_WAIT = 0
    refuse = threading.Event()
    fence_class = type(connections["default"]).write_fence_class
    monkeypatch.setattr(fence_class, "admits", lambda self: not refuse.is_set())
    callers = Callers(GroupCommit())
    release = callers.hold()
    callers.queue(["a", "b", "c"])
    refuse.set()  # the held call was admitted already; the batch behind it is not
    release.set()
    try:
        callers.join()
    finally:
        refuse.clear()

    assert stored_names() == {"held"}
    assert set(callers.errors) == {"a", "b", "c"}
    assert all(isinstance(error, UnderMaintenance) for error in callers.errors.values())
    assert len({id(error) for error in callers.errors.values()}) == 3, "each caller raises an error of its own"


def test_a_commit_that_fails_reaches_every_call_of_the_batch():
    def orphan_row():
        # Foreign keys are checked at COMMIT (deferred) on both databases: this row fails the whole COMMIT.
        with transaction.atomic():
            TimelineRow.objects.create(
                agent_id="no-such-agent", seq=1, committed_at=timezone.now(), item_type="x", item={"type": "x"}
            )

    callers = Callers(GroupCommit())
    release = callers.hold()
    callers.queue(["a"])
    callers.start_queued("orphan", orphan_row)
    callers.queue(["b"])
    release.set()
    callers.join()

    assert stored_names() == {"held"}
    assert set(callers.errors) == {"a", "orphan", "b"}
    assert all(isinstance(error, IntegrityError) for error in callers.errors.values())
    assert not TimelineRow.objects.exists()


def test_inside_an_atomic_block_the_work_runs_at_once_in_the_callers_transaction():
    group = GroupCommit()
    ran_on: list[int] = []

    def work():
        ran_on.append(threading.get_ident())
        return add_project("inside")

    with pytest.raises(RuntimeError), transaction.atomic():
        group.run(work)
        assert group.queued() == 0
        raise RuntimeError("the caller rolls back")
    assert ran_on == [threading.get_ident()]
    assert stored_names() == set()


def test_batches_are_bounded_in_calls_and_in_weight():
    callers = Callers(GroupCommit(max_requests=2, max_weight=5))
    release = callers.hold()
    callers.queue(["a", "b", "c", "d", "e"])
    callers.queue(["heavy-1", "heavy-2"], weight=3)
    release.set()
    callers.join()

    assert not callers.errors
    batches = callers.batches(["a", "b", "c", "d", "e", "heavy-1", "heavy-2"])
    # Two calls at most; 1 + 3 fits the weight of 5, 3 + 3 does not.
    assert batches == [{"a", "b"}, {"c", "d"}, {"e", "heavy-1"}, {"heavy-2"}]


def test_only_calls_of_one_lane_share_a_batch():
    callers = Callers(GroupCommit())
    release = callers.hold(lane="x")
    callers.queue(["x1", "x2"], lane="x")
    callers.start("y1", lane="y")
    release.set()
    callers.join()

    assert not callers.errors
    assert callers.batches(["x1", "x2"]) == [{"x1", "x2"}]
    assert callers.seen["y1"]["in_atomic_block"] is False, "another lane's call ran on its own"
    assert stored_names() == {"held", "x1", "x2", "y1"}


def test_a_work_with_an_atomic_block_of_its_own_runs_in_that_savepoint_alone(monkeypatch):
    savepoints: list[str] = []
    wrapper = type(connections["default"])
    real = wrapper._savepoint

    def savepoint(self, sid):
        if threading.current_thread().name != "caller-held":
            savepoints.append(sid)
        real(self, sid)

    monkeypatch.setattr(wrapper, "_savepoint", savepoint)

    def fails():
        with transaction.atomic():
            Project.objects.create(directory="/srv/gc/failed", display_name="failed", kind="git")
            raise ValueError("this call gives up")

    callers = Callers(GroupCommit())
    release = callers.hold()
    callers.start_queued("a", savepoint=False)
    callers.start_queued("failing", fails, savepoint=False)
    callers.start_queued("b", savepoint=False)
    release.set()
    callers.join()

    assert stored_names() == {"held", "a", "b"}
    assert set(callers.errors) == {"failing"}
    assert len(savepoints) == 3, "one savepoint per call: its own atomic block"
