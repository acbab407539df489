"""Timeline files of an import: checked whole first, then re-read and appended.

A file is ``timelines/<agent_id>.jsonl`` in the chartr timeline JSONL format
(``legacy.jsonl``). Rows are appended after the agent's ``head_seq`` through
``timeline.services.bulk_append_timeline_rows``, the timeline's own append
rules (contiguous seq, head moved, live subscribers told on commit). An agent
the import creates takes the file header's epoch; an existing agent keeps
its own, and the file must continue its history, which is checked on the
last row both share.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from legacy import jsonl
from legacy.located import capped
from legacy.problems import Problem, RecordError, changed_during_import
from legacy.report import ImportReport, Progress
from legacy.selectors import locked_rows, stored_timeline_row
from timeline.items import same_item
from timeline.models import TimelineHead
from timeline.rows import ReadRow
from timeline.services import bulk_append_timeline_rows

#: Timeline rows per INSERT batch: big enough to amortise the round trip,
#: small enough that memory stays flat at any file size.
ROW_BATCH = 5000


@dataclass
class TimelinePlan:
    path: Path
    agent_id: str
    #: the agent's epoch once imported: the header's for an agent the import creates
    epoch: str
    #: complete rows in the file (seq first_seq..last_seq)
    last_seq: int
    #: rows chartr already holds for this agent; rows after it are appended
    start_seq: int
    #: the file's first seq (its header's ``min_seq``)
    first_seq: int = 1
    #: a history starting above chartr's head + 1, carried into a timeline that retains nothing
    carry_over: bool = False

    @property
    def to_append(self) -> int:
        return max(0, self.last_seq - max(self.start_seq, self.first_seq - 1))


# --- checking -----------------------------------------------------------------


def scan_timelines(
    directory: Path,
    *,
    agent_ids: set[str],
    invalid_agent_ids: set[str],
    problems: list[Problem],
    report: ImportReport,
    progress: Progress,
) -> dict[str, TimelinePlan]:
    """A plan per valid file of ``directory``; invalid files go to ``problems``.

    ``agent_ids`` are the agents the import brings, ``invalid_agent_ids`` those
    whose record is invalid. The agents chartr already holds are locked here,
    so their heads stay as read until the rows are appended.
    """
    if not directory.is_dir():
        return {}
    paths = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix == ".jsonl":
            paths.append(path)
        else:
            report.warnings.append(f"{path}: ignored, not a .jsonl timeline file")
    existing = {agent.agent_id: agent for agent in locked_rows(TimelineHead, "agent_id", [p.stem for p in paths])}
    skipped = report.counts["timeline_rows"]
    plans: dict[str, TimelinePlan] = {}
    for index, path in enumerate(paths):
        progress("checking timelines", index, len(paths))
        agent = existing.get(path.stem)
        if agent is None and path.stem not in agent_ids:
            problems.append(Problem(str(path), "", _missing_agent_reason(path.stem, invalid_agent_ids)))
            skipped.skipped += _count_rows(path)
            continue
        plan, file_problems, row_lines = scan_timeline(path, agent, report)
        if file_problems:
            problems += file_problems
            skipped.skipped += row_lines
        elif plan is not None:
            plans[path.stem] = plan
    progress("checking timelines", len(paths), len(paths))
    return plans


def _missing_agent_reason(agent_id: str, invalid_agent_ids: set[str]) -> str:
    if agent_id in invalid_agent_ids:
        return f"agent {agent_id!r} has an invalid record in agents/"
    return f"no agent {agent_id!r} in agents/ or in chartr"


def _count_rows(path: Path) -> int:
    """The row lines of a file not read any further (every non-blank line but the header)."""
    with open(path, "rb") as handle:
        return max(0, sum(1 for line in handle if line.strip()) - 1)


def scan_timeline(
    path: Path, agent: TimelineHead | None, report: ImportReport
) -> tuple[TimelinePlan | None, list[Problem], int]:
    """Check the whole file, streamed. Returns (plan, problems, row lines)."""
    scan = _FileScan(path=path, head=agent.head_seq if agent is not None else 0, warnings=report.warnings)
    scan.read()
    if scan.header is None and not scan.problems:
        report.warnings.append(f"{path}: empty or only a truncated header; ignored")
        return None, [], 0
    if scan.problems:
        return None, capped(path, scan.problems), scan.row_lines
    if agent is not None and scan.shared_row is not None:
        mismatch = _continuity_problem(path, agent, scan.header, *scan.shared_row)
        if mismatch is not None:
            return None, [mismatch], scan.row_lines
    first_seq = scan.header.min_seq
    head = agent.head_seq if agent is not None else 0
    retains_nothing = agent is None or agent.min_seq > agent.head_seq
    if head < first_seq - 1 and not retains_nothing:
        gap = f"the file starts at seq {first_seq}, after a gap from chartr's head {head}"
        return None, [Problem(str(path), "line 1", gap)], scan.row_lines
    plan = TimelinePlan(
        path=path,
        agent_id=path.stem,
        # An existing agent keeps its epoch (appending is not replacing).
        epoch=scan.header.epoch if agent is None else agent.epoch,
        last_seq=scan.last_seq,
        start_seq=scan.head,
        first_seq=first_seq,
        carry_over=head < first_seq - 1,
    )
    return plan, [], scan.row_lines


@dataclass
class _FileScan:
    """One timeline file read line by line: the header, then contiguous rows."""

    path: Path
    #: the agent's head in chartr (0 for an agent the import creates)
    head: int
    warnings: list[str]
    header: jsonl.Header | None = None
    last_seq: int = 0
    row_lines: int = 0
    #: (line number, row) of the last row both chartr and the file hold: seq
    #: == head, or the file's last row when the file is shorter
    shared_row: tuple[int, ReadRow] | None = None
    problems: list[Problem] = field(default_factory=list)
    first_line_of_item_id: dict[str, int] = field(default_factory=dict)

    def read(self) -> None:
        for line in jsonl.read_lines(self.path):
            if line.error is not None and line.truncated:
                self.warnings.append(
                    f"{self.path}:line {line.lineno}: the last line is truncated (a write cut short); "
                    f"its {self.last_seq} complete row(s) are kept"
                )
                return
            if self.header is not None:
                self._read_row(line)
            elif not self._read_header(line):
                return

    def _problem(self, line: jsonl.Line, reason: str) -> None:
        self.problems.append(Problem(str(self.path), f"line {line.lineno}", reason))

    def _read_header(self, line: jsonl.Line) -> bool:
        """Whether the header is good; nothing after a bad one is read."""
        if line.error is not None:
            self._problem(line, line.error)
            return False
        try:
            header = jsonl.parse_header(line.value)
        except RecordError as exc:
            self._problem(line, str(exc))
            return False
        if header.agent_id != self.path.stem:
            self._problem(line, f"header agent_id {header.agent_id!r} does not match the file name")
            return False
        self.header = header
        self.last_seq = header.min_seq - 1
        return True

    def _read_row(self, line: jsonl.Line) -> None:
        self.row_lines += 1
        expected = self.last_seq + 1
        if line.error is not None:
            self._problem(line, line.error)
            self.last_seq = expected
            return
        try:
            row = jsonl.parse_row(line.value, expected_seq=expected)
        except RecordError as exc:
            self._problem(line, str(exc))
            self.last_seq = expected
            return
        if row.item_id is not None:
            first = self.first_line_of_item_id.setdefault(row.item_id, line.lineno)
            if first != line.lineno:
                self._problem(line, f"item_id {row.item_id!r} repeats line {first}")
        self.last_seq = row.seq
        if row.seq <= self.head:
            self.shared_row = (line.lineno, row)


def _continuity_problem(
    path: Path, agent: TimelineHead, header: jsonl.Header, lineno: int, row: ReadRow
) -> Problem | None:
    """A problem when the file's row differs from the one chartr holds at the same seq."""
    stored = stored_timeline_row(agent_id=agent.agent_id, seq=row.seq)
    # Items compare as JSON (timeline.items.same_item): PostgreSQL's jsonb
    # hands back reordered keys and decimal numbers, and 1 is not true.
    if (
        stored is not None
        and (stored["committed_at"], stored["item_id"]) == (row.committed_at, row.item_id)
        and same_item(stored["item"], row.item)
    ):
        return None
    return Problem(
        str(path),
        f"line {lineno}",
        f"row seq {row.seq} differs from the one chartr holds for agent {agent.agent_id!r}: "
        f"this file does not continue the agent's history in chartr "
        f"(file epoch {header.epoch!r}, chartr epoch {agent.epoch!r})",
    )


# --- appending ----------------------------------------------------------------


def write_timelines(timelines: Iterable[TimelinePlan], report: ImportReport, *, progress: Progress) -> None:
    """Append each planned file's new rows, streamed in batches of ``ROW_BATCH``."""
    timelines = list(timelines)
    counts = report.counts["timeline_rows"]
    total = sum(timeline.to_append for timeline in timelines)
    done = 0

    def batch_inserted(rows: int) -> None:
        nonlocal done
        done += rows
        progress("importing timeline rows", done, total)

    for timeline in timelines:
        unchanged = max(0, min(timeline.last_seq, timeline.start_seq) - timeline.first_seq + 1)
        counts.unchanged += unchanged
        if not timeline.to_append:
            report.rows_by_agent[timeline.agent_id] = f"0 created, {unchanged} unchanged (from {timeline.path})"
            continue
        appended = bulk_append_timeline_rows(
            agent_id=timeline.agent_id,
            rows=_rows_to_append(timeline),
            # The agent row has been locked since it was checked; this is the backstop.
            expected_head_seq=timeline.start_seq,
            # Legacy history carries over into agents the legacy data archived.
            allow_archived=True,
            batch_size=ROW_BATCH,
            on_batch=batch_inserted,
            start_seq=timeline.first_seq if timeline.carry_over else None,
        )
        counts.created += appended.created
        report.rows_by_agent[timeline.agent_id] = (
            f"{appended.created} created, {unchanged} unchanged (from {timeline.path})"
        )


def _rows_to_append(timeline: TimelinePlan) -> Iterator[ReadRow]:
    """Rows after start_seq up to last_seq, re-read from the file. They were
    checked moments ago; a file that changed in between aborts the import."""
    expected = timeline.first_seq
    lines = jsonl.read_lines(timeline.path)
    next(lines, None)  # the header, checked already
    for line in lines:
        if expected > timeline.last_seq:
            return
        if line.error is not None:
            raise changed_during_import(timeline.path, f"line {line.lineno}", line.error)
        try:
            row = jsonl.parse_row(line.value, expected_seq=expected)
        except RecordError as exc:
            raise changed_during_import(timeline.path, f"line {line.lineno}", str(exc)) from None
        expected += 1
        if row.seq > timeline.start_seq:
            yield row
    if expected <= timeline.last_seq:
        raise changed_during_import(timeline.path, "", f"ends before seq {timeline.last_seq}")
