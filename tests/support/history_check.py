"""An Elle-style check of a timeline history: what clients were told against what they read.

The workload (tests/process/history_workload.py) records every operation with the
time it was invoked and completed (one monotonic clock):

- ``Append``: one append call's item ids and its outcome: acknowledged (``ok``, with the
  epoch and the seq of each item), refused (``ok=False``: nothing was written, a 4xx or
  503), or no answer at all (``ok=None``: cut off by a kill, it may or may not have committed);
- ``Read``: one REST read of a whole timeline (``limit=0``): the epoch and the rows;
- ``Segment``: what one stream connection sent in one epoch (rows after its cursor);
- ``Restore``: a data snapshot restored, per agent: the epoch the snapshot was taken in,
  the new epoch the restore gave, and when the snapshot was taken.

Every item id is written once (a retry sends the same ids again), so a row names the
append it came from, as Elle's list-append values do. A restore rolls an agent back to
the snapshot under a new epoch; the history valid for that epoch is its **base** (the
acknowledged rows of the snapshot's epoch completed before the snapshot began; those
invoked after it ended are gone) followed by the appends acknowledged in the new epoch.

``check(history)`` returns every anomaly found, each of one kind:

- ``lost``: a row acknowledged (or read) before a read began is missing from it, or a read
  skips a seq;
- ``duplicated``: an item at two seqs, in one read or in the answers;
- ``reordered``: an item at another seq than it was acknowledged at, two items at one seq,
  rows out of order;
- ``phantom``: a row that was never written, whose append was refused, or that the restore
  rolled back;
- ``stream``: a stream connection's rows are not a run of the epoch's committed history
  right after its cursor (a gap, a repeat, another row), or a reconnect did not resume where
  the last connection stopped.

Pure functions over the records: no clock, no I/O (tests/support/test_history_check.py).
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

LOST, DUPLICATED, REORDERED, PHANTOM, STREAM = "lost", "duplicated", "reordered", "phantom", "stream"

Row = tuple[int, str]  # (seq, item_id)


@dataclass(frozen=True)
class Append:
    agent: str
    items: tuple[str, ...]
    invoked: float
    completed: float | None = None
    #: True: acknowledged; False: refused, nothing written; None: no answer (indeterminate).
    ok: bool | None = None
    epoch: str | None = None
    seqs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Read:
    agent: str
    invoked: float
    completed: float
    epoch: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Segment:
    """Rows one stream connection sent in one epoch, after ``cursor`` (its opening or reset event's id)."""

    follower: str
    agent: str
    epoch: str
    cursor: int
    rows: tuple[Row, ...]
    #: True when the segment began with a ``reset`` event: the rows before are another history.
    reset: bool = False


@dataclass(frozen=True)
class Restore:
    agent: str
    base_epoch: str
    epoch: str
    snapshot_invoked: float
    snapshot_completed: float


@dataclass(frozen=True)
class Anomaly:
    kind: str
    agent: str
    epoch: str
    detail: str


@dataclass
class History:
    appends: list[Append] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    restores: list[Restore] = field(default_factory=list)


@dataclass(frozen=True)
class _Ack:
    seq: int
    invoked: float
    completed: float


def summary(anomalies: Iterable[Anomaly], *, limit: int = 20) -> str:
    """A few lines for an assertion message: the count of each kind, then the first anomalies."""
    anomalies = list(anomalies)
    counts = Counter(anomaly.kind for anomaly in anomalies)
    lines = [", ".join(f"{kind}: {count}" for kind, count in sorted(counts.items())) or "no anomaly"]
    lines += [f"  {a.kind} {a.agent}@{a.epoch}: {a.detail}" for a in anomalies[:limit]]
    return "\n".join(lines)


def check(history: History) -> list[Anomaly]:
    model = _Model(history)
    found = list(model.ack_anomalies)
    for read in history.reads:
        found += model.check_read(read)
    found += model.check_reads_grow(history.reads)
    found += model.check_segments(history.segments)
    return found


class _Model:
    """What the appends' answers and the restores say each epoch's history is."""

    def __init__(self, history: History):
        self.written: set[str] = set()  # items of appends acknowledged or unanswered
        self.unanswered: set[str] = set()  # items of appends that got no answer (they may have committed)
        self.acked: dict[str, set[tuple[str, str]]] = defaultdict(set)  # item -> {(agent, epoch)}
        self.acks: dict[tuple[str, str], dict[str, _Ack]] = defaultdict(dict)
        self.holders: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
        self.restores = {(r.agent, r.epoch): r for r in history.restores}
        self.ack_anomalies: list[Anomaly] = []
        self._bases: dict[tuple[str, str], dict[int, str]] = {}
        for append in history.appends:
            if append.ok is not False:
                self.written.update(append.items)
            if append.ok is None:
                self.unanswered.update(append.items)
            if append.ok:
                self._acknowledge(append)
        self.committed = self._committed(history.reads)

    def _acknowledge(self, append: Append) -> None:
        key = (append.agent, append.epoch)
        for item, seq in zip(append.items, append.seqs, strict=True):
            known = self.acks[key].get(item)
            if known is not None and known.seq != seq:
                self.ack_anomalies.append(
                    Anomaly(DUPLICATED, *key, f"{item} acknowledged at seq {known.seq} and at seq {seq}")
                )
                continue
            holder = self.holders[key].setdefault(seq, item)
            if holder != item:
                self.ack_anomalies.append(Anomaly(REORDERED, *key, f"seq {seq} acknowledged as {holder} and as {item}"))
            if known is None:
                self.acks[key][item] = _Ack(seq, append.invoked, append.completed)
                self.acked[item].add(key)

    def _committed(self, reads: list[Read]) -> dict[tuple[str, str], dict[int, str]]:
        """Each epoch's rows as the reads saw them (the first read of a seq wins; conflicts are the reads' anomalies)."""
        committed: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
        for read in sorted(reads, key=lambda r: r.invoked):
            rows = committed[(read.agent, read.epoch)]
            for seq, item in read.rows:
                rows.setdefault(seq, item)
        return committed

    def base(self, agent: str, epoch: str, depth: int = 0) -> dict[int, str]:
        """The rows an epoch a restore began must start with: its snapshot epoch's rows acknowledged before the snapshot."""
        key = (agent, epoch)
        if key not in self._bases:
            restore = self.restores.get(key)
            rows: dict[int, str] = {}
            if restore is not None and depth < 100:
                rows.update(self.base(agent, restore.base_epoch, depth + 1))
                for item, ack in self.acks[(agent, restore.base_epoch)].items():
                    if ack.completed < restore.snapshot_invoked:
                        rows[ack.seq] = item
            self._bases[key] = rows
        return self._bases[key]

    def verdict(self, agent: str, epoch: str, seq: int, item: str, depth: int = 0) -> tuple[str, str] | None:
        """Why ``item`` cannot be at ``seq`` in this epoch, or None when it can."""
        if item not in self.written:
            return PHANTOM, f"{item} at seq {seq} was never written (no append of it was acknowledged or unanswered)"
        own = self.acks[(agent, epoch)].get(item)
        if own is not None:
            return None if own.seq == seq else (REORDERED, f"{item} at seq {seq}, acknowledged at seq {own.seq}")
        holder = self.holders[(agent, epoch)].get(seq)
        if holder is not None:
            return REORDERED, f"seq {seq} holds {item}, acknowledged as {holder}"
        restore = self.restores.get((agent, epoch))
        if restore is not None and depth < 100:
            inherited = self.verdict(agent, restore.base_epoch, seq, item, depth + 1)
            if item in self.unanswered:
                return None  # an unanswered retry may have written it in this epoch too
            before = self.acks[(agent, restore.base_epoch)].get(item)
            if inherited is None and before is not None and before.invoked > restore.snapshot_completed:
                return PHANTOM, f"{item} at seq {seq} was written after the snapshot, so the restore rolled it back"
            return inherited
        if item in self.unanswered:
            return None
        return PHANTOM, f"{item} at seq {seq} was acknowledged only in another epoch ({sorted(self.acked[item])})"

    def required(self, agent: str, epoch: str, before: float) -> dict[int, str]:
        """The rows every read of this epoch begun at ``before`` must hold."""
        rows = dict(self.base(agent, epoch))
        for item, ack in self.acks[(agent, epoch)].items():
            if ack.completed < before:
                rows[ack.seq] = item
        return rows

    def check_read(self, read: Read) -> list[Anomaly]:
        found: list[Anomaly] = []

        def report(kind: str, detail: str) -> None:
            found.append(Anomaly(kind, read.agent, read.epoch, f"read at {read.invoked:.3f}: {detail}"))

        previous = 0
        where: dict[str, int] = {}
        for seq, item in read.rows:
            if seq <= previous:
                report(REORDERED, f"seq {seq} comes after seq {previous}")
            elif seq != previous + 1:
                report(LOST, f"seqs {previous + 1}..{seq - 1} are missing (the rows jump from {previous} to {seq})")
            previous = max(previous, seq)
            if item in where:
                report(DUPLICATED, f"{item} at seq {where[item]} and at seq {seq}")
            where.setdefault(item, seq)
            problem = self.verdict(read.agent, read.epoch, seq, item)
            if problem is not None:
                report(*problem)
        held = dict(read.rows)
        for seq, item in sorted(self.required(read.agent, read.epoch, read.invoked).items()):
            if held.get(seq) != item and item not in where:
                report(LOST, f"{item}, acknowledged at seq {seq} before the read began, is missing")
        return found

    def check_reads_grow(self, reads: list[Read]) -> list[Anomaly]:
        """Within an epoch, a read begun after another ended holds every row that one held, at the same seq."""
        found: list[Anomaly] = []
        by_epoch: dict[tuple[str, str], list[Read]] = defaultdict(list)
        for read in reads:
            by_epoch[(read.agent, read.epoch)].append(read)
        for (agent, epoch), group in by_epoch.items():
            group.sort(key=lambda r: r.invoked)
            ended: list[tuple[float, int, Read]] = []
            for index, read in enumerate(group):
                heapq.heappush(ended, (read.completed, index, read))
            longest: Read | None = None
            for read in group:
                while ended and ended[0][0] < read.invoked:
                    done = heapq.heappop(ended)[2]
                    if longest is None or len(done.rows) > len(longest.rows):
                        longest = done
                if longest is None:
                    continue
                held = dict(read.rows)
                for seq, item in longest.rows:
                    if held.get(seq) != item:
                        detail = f"{item} at seq {seq}, read at {longest.invoked:.3f}, is " + (
                            f"{held[seq]} in the read at {read.invoked:.3f}"
                            if seq in held
                            else f"missing from the read at {read.invoked:.3f}"
                        )
                        found.append(Anomaly(REORDERED if seq in held else LOST, agent, epoch, detail))
                        break
        return found

    def check_segments(self, segments: list[Segment]) -> list[Anomaly]:
        found: list[Anomaly] = []
        last: dict[str, Segment] = {}
        for segment in segments:
            previous = last.get(segment.follower)
            found += self._check_resume(previous, segment)
            found += self._check_segment(segment)
            last[segment.follower] = segment
        return found

    def _check_resume(self, previous: Segment | None, segment: Segment) -> list[Anomaly]:
        if previous is None or segment.reset:
            return []
        stopped = previous.rows[-1][0] if previous.rows else previous.cursor
        if segment.epoch != previous.epoch:
            detail = f"{segment.follower} went from epoch {previous.epoch} to this one without a reset"
        elif segment.cursor != stopped:
            detail = f"{segment.follower} resumed after seq {segment.cursor}, having received up to seq {stopped}"
        else:
            return []
        return [Anomaly(STREAM, segment.agent, segment.epoch, detail)]

    def _check_segment(self, segment: Segment) -> list[Anomaly]:
        key = (segment.agent, segment.epoch)
        reference = {**self.base(*key), **self.committed.get(key, {}), **self.holders.get(key, {})}
        found: list[Anomaly] = []
        expected = segment.cursor + 1
        for seq, item in segment.rows:
            where = f"{segment.follower} after cursor {segment.cursor}"
            if seq != expected:
                found.append(Anomaly(STREAM, *key, f"{where}: seq {seq} where seq {expected} was due"))
                break
            expected += 1
            if seq in reference and reference[seq] != item:
                detail = f"{where}: {item} at seq {seq}, the committed history has {reference[seq]}"
                found.append(Anomaly(STREAM, *key, detail))
                continue
            problem = self.verdict(segment.agent, segment.epoch, seq, item)
            if problem is not None:
                kind, detail = problem
                found.append(Anomaly(PHANTOM if kind == PHANTOM else STREAM, *key, f"{where}: {detail}"))
        return found
