"""The API append under group commit (timeline/writes/group_commit.py), with real threads on the real database.

Each append runs on a thread of its own with its own connection, as on the
server's pool. A first append is held after its COMMIT (in a
``timeline_committed`` receiver, while its thread still leads the lane) until
the others have queued behind it, so they form one batch for sure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connections

from kernel.errors import ArchivedConflict, NotFound
from kernel.write_fence import is_outside_write_fence
from snapshots.services import archive_agent
from tests.factories import AgentFactory
from tests.support.processes import wait_for
from timeline.errors import ItemConflict, SeqConflict
from timeline.models import TimelineRow
from timeline.services import AppendResult, NewTimelineItem, append_timeline_items
from timeline.signals import timeline_committed
from timeline.writes.group_commit import append_lane, appends

pytestmark = pytest.mark.django_db(transaction=True)


def say(text: str, item_id: str | None = None) -> NewTimelineItem:
    return NewTimelineItem(item={"type": "user_message", "text": text}, item_id=item_id)


def seqs(agent_id: str) -> list[int]:
    return list(TimelineRow.objects.filter(agent_id=agent_id).order_by("seq").values_list("seq", flat=True))


class Appenders:
    """Appends on threads of their own; outcomes by name; the lane held by a first append until released."""

    def __init__(self, agent_id: str):
        self.agent_id = agent_id
        self.lane = append_lane(agent_id)
        self.threads: list[threading.Thread] = []
        self.results: dict[str, AppendResult] = {}
        self.errors: dict[str, BaseException] = {}
        #: name -> whether the append's own rows were visible to its own connection once answered
        self.visible_at_answer: dict[str, bool] = {}
        #: (agent_id, head_seq, thread) of every timeline_committed
        self.heard: list[tuple[str, int, int]] = []
        self._release = threading.Event()
        self._holding = threading.Event()

    def __enter__(self) -> Appenders:
        timeline_committed.connect(self._on_committed, weak=False, dispatch_uid="group-commit-test")
        return self

    def __exit__(self, *exc_info) -> None:
        self._release.set()
        self.join()
        timeline_committed.disconnect(dispatch_uid="group-commit-test")

    def _on_committed(self, sender, *, agent_id: str, head_seq: int, **kwargs) -> None:
        self.heard.append((agent_id, head_seq, threading.get_ident()))
        if self._holding.is_set():
            self._holding.clear()
            assert self._release.wait(30)

    def start(self, name: str, *, agent_id: str | None = None, **kwargs) -> None:
        agent_id = agent_id or self.agent_id

        def append() -> None:
            try:
                result = append_timeline_items(agent_id=agent_id, **kwargs)
                self.results[name] = result
                mine = [row.seq for row in result.rows]
                self.visible_at_answer[name] = TimelineRow.objects.filter(
                    agent_id=agent_id, seq__in=mine
                ).count() == len(mine)
            except BaseException as exc:
                self.errors[name] = exc
            finally:
                connections.close_all()

        thread = threading.Thread(target=append, name=f"append-{name}")
        self.threads.append(thread)
        thread.start()

    def hold(self, name: str = "held", **kwargs) -> None:
        """Start an append whose thread stays in the lane, after its COMMIT, until ``release``."""
        self._holding.set()
        self.start(name, **kwargs)
        wait_for(lambda: not self._holding.is_set(), timeout=30, what="the first append to commit")

    def queue(self, name: str, **kwargs) -> None:
        before = appends.queued(self.lane)
        self.start(name, **kwargs)
        wait_for(lambda: appends.queued(self.lane) > before, timeout=30, what=f"{name} to queue")

    def release(self) -> None:
        self._release.set()
        self.join()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in self.threads), "an append never got its answer"


@pytest.fixture
def commits(monkeypatch) -> list[int]:
    """The threads of the write transactions committed, in order (not the NOTIFY that follows one on PostgreSQL)."""
    made: list[int] = []
    real = type(connections["default"]).commit

    def commit(self):
        real(self)
        if not is_outside_write_fence():
            made.append(threading.get_ident())

    monkeypatch.setattr(type(connections["default"]), "commit", commit)
    return made


def test_appends_queued_behind_a_commit_share_one_transaction_and_keep_seqs_contiguous(commits):
    agent = AgentFactory()
    commits.clear()
    with Appenders(agent.pk) as appenders:
        appenders.hold(items=[say("first", "i0")])
        for n in range(1, 6):
            appenders.queue(f"a{n}", items=[say(f"m{n}", f"i{n}"), say(f"m{n}b")])
        appenders.release()

    assert not appenders.errors
    assert len(commits) == 2, "the first append's own transaction, then one for the five queued behind it"
    assert seqs(agent.pk) == list(range(1, 12))
    stored = dict(TimelineRow.objects.filter(agent=agent).values_list("item_id", "seq"))
    for n in range(1, 6):
        first, second = appenders.results[f"a{n}"].rows
        assert (first.item_id, first.seq + 1) == (f"i{n}", second.seq), "each append's rows stay together"
        assert stored[f"i{n}"] == first.seq
    assert all(appenders.visible_at_answer.values()), "every answer came once its rows were committed"
    agent.refresh_from_db()
    assert agent.timeline_head.head_seq == 11
    batch_signals = [(head, thread) for _, head, thread in appenders.heard[1:]]
    assert len(batch_signals) == 5 and len({thread for _, thread in batch_signals}) == 1
    assert sorted(head for head, _ in batch_signals) == [3, 5, 7, 9, 11], "one per append, none lost or repeated"


def test_a_failing_append_in_a_batch_gets_its_own_error_and_the_others_commit():
    agent, archived = AgentFactory(), AgentFactory()
    archive_agent(agent=archived)
    with Appenders(agent.pk) as appenders:
        appenders.hold(items=[say("first", "taken")])
        appenders.queue("ok-1", items=[say("one")])
        appenders.queue("stale-head", items=[say("late")], expected_head_seq=0)
        appenders.queue("reused-id", items=[say("other content", "taken")])
        appenders.start("unknown", agent_id="no-such-agent", items=[say("x")])
        appenders.start("archived", agent_id=archived.pk, items=[say("x")])
        appenders.queue("ok-2", items=[say("two"), say("three")])
        wait_for(
            lambda: (
                appends.queued(appenders.lane) >= (4 if appenders.lane is not None else 6) or len(appenders.errors) >= 2
            ),
            timeout=30,
            what="the appends to queue",
        )
        appenders.release()

    assert set(appenders.errors) == {"stale-head", "reused-id", "unknown", "archived"}
    assert isinstance(appenders.errors["stale-head"], SeqConflict)
    assert isinstance(appenders.errors["reused-id"], ItemConflict) and appenders.errors["reused-id"].extra == {
        "item_id": "taken",
        "seq": 1,
    }
    assert isinstance(appenders.errors["unknown"], NotFound)
    assert isinstance(appenders.errors["archived"], ArchivedConflict)
    assert seqs(agent.pk) == [1, 2, 3, 4], "the failed appends left no row and no gap"
    assert [row.seq for row in appenders.results["ok-1"].rows] == [2]
    assert [row.seq for row in appenders.results["ok-2"].rows] == [3, 4]
    assert seqs(archived.pk) == []


def test_a_retry_in_the_same_batch_and_in_a_later_one_is_answered_with_the_original_seq():
    agent = AgentFactory()
    with Appenders(agent.pk) as appenders:
        appenders.hold(items=[say("first")])
        appenders.queue("try", items=[say("hello", "h1")])
        appenders.queue("retry", items=[say("hello", "h1")])
        appenders.release()
    assert not appenders.errors
    first, retry = appenders.results["try"], appenders.results["retry"]
    assert (first.created, first.replayed, retry.created, retry.replayed) == (1, 0, 0, 1)
    assert first.rows[0].seq == retry.rows[0].seq == 2

    later = append_timeline_items(agent_id=agent.pk, items=[say("hello", "h1"), say("new")])
    assert (later.created, later.replayed, [row.seq for row in later.rows]) == (1, 1, [2, 3])
    assert seqs(agent.pk) == [1, 2, 3]


def test_with_group_commit_off_every_append_commits_on_its_own(settings, commits):
    settings.CHARTR_GROUP_COMMIT = False
    agent = AgentFactory()
    commits.clear()
    with Appenders(agent.pk) as appenders:
        appenders.hold(items=[say("first")])
        for n in range(4):
            appenders.start(f"a{n}", items=[say(f"m{n}")])
        wait_for(lambda: len(appenders.results) == 4, timeout=30, what="the other appends to commit")
        assert appends.queued(appenders.lane) == 0
        appenders.release()
    assert not appenders.errors
    assert len(commits) == 5
    assert seqs(agent.pk) == [1, 2, 3, 4, 5]


def test_many_appenders_on_shared_and_separate_agents_keep_every_timeline_contiguous():
    shared, *own = [AgentFactory() for _ in range(4)]
    threads, appends_each = 8, 25
    errors: list[BaseException] = []
    answered: dict[str, tuple[str, int]] = {}
    start = threading.Barrier(threads)

    def appender(worker: int) -> None:
        agent_id = shared.pk if worker % 2 else own[worker // 2 % len(own)].pk
        try:
            start.wait()
            for n in range(appends_each):
                item_id = f"w{worker}-{n}"
                result = append_timeline_items(agent_id=agent_id, items=[say(item_id, item_id)])
                answered[item_id] = (agent_id, result.rows[0].seq)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    run: Callable[[int], threading.Thread] = lambda w: threading.Thread(target=appender, args=(w,))  # noqa: E731
    workers = [run(w) for w in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    stored = {
        item_id: (agent_id, seq)
        for agent_id, item_id, seq in TimelineRow.objects.values_list("agent_id", "item_id", "seq")
    }
    assert stored == answered
    for agent in (shared, *own):
        count = TimelineRow.objects.filter(agent=agent).count()
        assert seqs(agent.pk) == list(range(1, count + 1))
