"""Paseo histories of an import: matched against chartr, then written.

A history is carried over as Paseo had it: its epoch and its seqs, so a Paseo
client's cursor ``{epoch, seq}`` goes on after the migration without a reset,
a history whose older rows Paseo pruned keeps a first retained seq above 1, and
one with holes in its seqs keeps its rows at their own seqs (each hole reported).
Every row goes through ``timeline.services.bulk_append_timeline_rows``, the
timeline's one write path (``start_seq``/``epoch`` for a carry-over).

Against what chartr holds for the agent:

- nothing (a new agent, or a timeline that retains nothing): carried over;
- the same epoch, at or past the history's last seq: unchanged (the last
  shared row is compared, so a different history is never taken for the same);
- the same epoch, behind: the rows after chartr's head are appended;
- another epoch with rows: a problem; chartr never mixes two histories.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from legacy.paseo import PaseoHistory, PaseoRow, PaseoStores
from legacy.problems import LegacyImportInvalid, Problem, RecordError, changed_during_import
from legacy.report import ImportReport, Progress
from legacy.selectors import locked_rows, stored_timeline_row
from legacy.timelines import ROW_BATCH
from timeline.models import TimelineHead
from timeline.services import bulk_append_timeline_rows


@dataclass
class HistoryPlan:
    history: PaseoHistory
    #: chartr's head when checked (0 for an agent the import creates)
    chartr_head: int
    #: rows with a seq above this are written
    append_after: int
    #: a history carried into a timeline that retains nothing (start_seq and epoch given)
    carry_over: bool
    unchanged: int = 0

    @property
    def to_append(self) -> int:
        return self.history.rows_between(max(self.append_after + 1, self.history.first_seq), self.history.last_seq)


def plan_histories(
    stores: PaseoStores,
    *,
    agent_ids: set[str],
    invalid_agent_ids: set[str],
    jsonl_agent_ids: set[str],
    problems: list[Problem],
    report: ImportReport,
) -> dict[str, HistoryPlan]:
    """A plan per history whose agent the import brings or chartr holds (locked from here on)."""
    report.skipped_files += stores.skipped
    report.warnings += stores.warnings
    problems += stores.problems
    report.counts["timeline_rows"].skipped += stores.skipped_rows
    existing = {a.agent_id: a for a in locked_rows(TimelineHead, "agent_id", list(stores.histories))}
    plans: dict[str, HistoryPlan] = {}
    for agent_id, history in sorted(stores.histories.items()):
        agent = existing.get(agent_id)
        reason = _reason_to_skip(agent_id, agent, agent_ids, invalid_agent_ids, jsonl_agent_ids)
        if reason is not None:
            report.skipped_files.append(f"{_where(history)}: skipped, {reason}")
            report.warnings.append(f"{_where(history)}: {history.row_count} row(s) not imported: {reason}")
            report.counts["timeline_rows"].skipped += history.row_count
            continue
        try:
            plans[agent_id] = _plan(history, agent)
        except RecordError as exc:
            problems.append(Problem(str(history.source), f"agent {agent_id!r}", str(exc)))
            report.counts["timeline_rows"].skipped += history.row_count
            continue
        _report_shape(history, report)
    return plans


def _report_shape(history: PaseoHistory, report: ImportReport) -> None:
    """The holes of a history imported with them, and the items it normalised."""
    report.holes += [f"{_where(history)}: seqs {first}..{last} missing" for first, last in history.holes]
    report.normalised_items += [
        f"{_where(history)}: seq {seq}: stored as a legacy_item: {' '.join(problems)}"
        for seq, problems in history.normalised
    ]


def _where(history: PaseoHistory) -> str:
    return f"{history.source}: agent {history.agent_id!r}" if history.from_db else str(history.source)


def _reason_to_skip(
    agent_id: str,
    agent: TimelineHead | None,
    agent_ids: set[str],
    invalid_agent_ids: set[str],
    jsonl_agent_ids: set[str],
) -> str | None:
    if agent_id in jsonl_agent_ids:
        return f"the chartr timeline file timelines/{agent_id}.jsonl is imported instead"
    if agent is not None or agent_id in agent_ids:
        return None
    if agent_id in invalid_agent_ids:
        return f"orphan history: agent {agent_id!r} has an invalid record in agents/"
    return f"orphan history: no agent {agent_id!r} in agents/ or in chartr"


def _plan(history: PaseoHistory, agent: TimelineHead | None) -> HistoryPlan:
    if agent is None or (agent.min_seq > agent.head_seq and not _holds_all(history, agent)):
        head = agent.head_seq if agent is not None else 0
        if agent is not None and history.epoch == agent.epoch and history.first_seq <= head:
            raise RecordError(f"starts at seq {history.first_seq}, but chartr already used seqs up to {head}")
        return HistoryPlan(history, chartr_head=head, append_after=history.first_seq - 1, carry_over=True)
    if history.epoch != agent.epoch:
        raise RecordError(
            f"epoch {history.epoch!r} differs from the agent's epoch {agent.epoch!r} in chartr, "
            "which already holds rows: the two histories cannot be merged"
        )
    if agent.head_seq < history.first_seq - 1:
        raise RecordError(f"starts at seq {history.first_seq}, after a gap from chartr's head {agent.head_seq}")
    shared = history.last_row_at_or_below(min(agent.head_seq, history.last_seq))
    if shared >= max(history.first_seq, agent.min_seq):
        _check_same_row(history, agent, shared)
    unchanged = history.rows_between(max(history.first_seq, agent.min_seq), shared)
    return HistoryPlan(
        history, chartr_head=agent.head_seq, append_after=agent.head_seq, carry_over=False, unchanged=unchanged
    )


def _holds_all(history: PaseoHistory, agent: TimelineHead) -> bool:
    """An empty timeline already carried over from this history (nothing retained in either)."""
    return history.epoch == agent.epoch and agent.head_seq >= history.last_seq


def _check_same_row(history: PaseoHistory, agent: TimelineHead, seq: int) -> None:
    row = next((row for row in history.rows() if row.seq == seq), None)
    stored = stored_timeline_row(agent_id=agent.agent_id, seq=seq)
    if row is None or stored is None or (stored["committed_at"], stored["item"]) != (row.committed_at, row.item):
        raise RecordError(f"row seq {seq} differs from the one chartr holds: this is not the same history")


# --- writing ------------------------------------------------------------------


def write_histories(plans: Iterable[HistoryPlan], report: ImportReport, *, progress: Progress) -> None:
    plans = list(plans)
    counts = report.counts["timeline_rows"]
    total = sum(plan.to_append for plan in plans)
    done = 0

    def batch_inserted(rows: int) -> None:
        nonlocal done
        done += rows
        progress("importing Paseo history rows", done, total)

    progress("importing Paseo history rows", 0, total)
    for plan in plans:
        history = plan.history
        counts.unchanged += plan.unchanged
        created = 0
        if plan.to_append or plan.carry_over:
            appended = bulk_append_timeline_rows(
                agent_id=history.agent_id,
                rows=_rows_to_append(plan, report),
                expected_head_seq=plan.chartr_head,
                allow_archived=True,
                batch_size=ROW_BATCH,
                on_batch=batch_inserted,
                start_seq=history.first_seq if plan.carry_over else None,
                epoch=history.epoch if plan.carry_over else None,
                keep_seqs=True,
            )
            created = appended.created
            if created != plan.to_append:
                raise _changed(history, f"{created} row(s) where {plan.to_append} were checked")
        counts.created += created
        report.rows_by_agent[history.agent_id] = (
            f"{created} created, {plan.unchanged} unchanged (seq {history.first_seq}..{history.last_seq}, "
            f"epoch {history.epoch!r}, from {history.source})"
        )


def _rows_to_append(plan: HistoryPlan, report: ImportReport) -> Iterable[PaseoRow]:
    previous = plan.history.first_seq - 1
    try:
        for row in plan.history.rows():
            if row.seq <= previous:
                raise _changed(plan.history, f"seq {row.seq} after {previous}")
            previous = row.seq
            if row.seq > plan.append_after:
                report.count_extra("timeline_rows", row.extra)
                yield row
    except RecordError as exc:
        raise _changed(plan.history, str(exc)) from None


def _changed(history: PaseoHistory, reason: str) -> LegacyImportInvalid:
    return changed_during_import(history.source, f"agent {history.agent_id!r}", reason)
