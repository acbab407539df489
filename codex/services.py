"""``import_codex`` and ``export_codex``: a Codex home into chartr, kept up to date, and back out.

Import, in one transaction (a dry run rolls it back):

1. **Read** the home (``codex.rollouts.read_home``): every rollout file, grouped into threads, each
   thread's sealed segments before its live file. Any bad file or line aborts the run, naming it.
2. **Place** each new thread: the agent of the same id, ``provider`` ``codex``, in the workspace
   ``registry.services.workspace_for_directory`` gives its ``session_meta`` cwd (with the git remote
   and branch it records), the child of the thread it was forked from when that one is known.
3. **Append** the lines not yet taken in, one row each, the line kept whole as a ``codex.<type>``
   item (``timeline.items.foreign_item``). A thread's lines are checked first to begin with
   exactly the lines taken in before (by digest): so a rerun appends nothing, a top-up only what
   was added, also after Codex replaced the live file with a new segment that refers back to the
   sealed one, and a history rewritten in place stops the run instead of leaving a hole or a
   duplicate.
4. **Archive** the agents whose rollout is in ``archived_sessions/``, then record the run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from codex.models import CodexImportRun, CodexThread
from codex.report import (
    CodexExportRefused,
    CodexExportReport,
    CodexImportInvalid,
    CodexImportReport,
)
from codex.rollouts import CodexHome, Line, Thread, read_home
from codex.selectors import agent_codex_records, codex_agent, codex_threads, thread_records
from legacy.problems import Problem
from legacy.report import Progress, import_after_snapshot, no_progress
from registry.services import workspace_for_directory
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent, create_agent
from timeline.items import foreign_item
from timeline.services import PendingRow, bulk_append_timeline_rows

NAMESPACE = "codex"
PROVIDER = "codex"


def import_codex(*, source: Path | str, dry_run: bool = False, progress: Progress | None = None) -> CodexImportReport:
    """Import the Codex home (or its ``sessions/``, or one rollout file) at ``source``, after a data
    snapshot as the other importers do (``legacy.report.import_after_snapshot``). Raises
    ``CodexImportInvalid`` (nothing written) on bad input."""
    progress = progress or no_progress
    home = read_home(Path(source), progress)

    def new_report(dry_run: bool) -> CodexImportReport:
        return CodexImportReport(
            source=str(source), dry_run=dry_run, unread=list(home.unread), warnings=list(home.warnings)
        )

    return import_after_snapshot(
        source, CodexImportRun.objects, new_report, partial(_import_once, home, progress), dry_run=dry_run
    )


def _import_once(home: CodexHome, progress: Progress, report: CodexImportReport, only_if_unchanged: bool) -> bool:
    """One run in one transaction; whether it was kept (``only_if_unchanged``: not when it changed anything)."""
    started_at = timezone.now()
    with transaction.atomic():
        threads = _parents_first(home.threads)
        for done, thread in enumerate(threads, 1):
            progress("importing threads", done, len(threads))
            _import_thread(thread, report)
        if only_if_unchanged and report.changed_anything:
            transaction.set_rollback(True)
            return False
        run = CodexImportRun.objects.create(
            source_path=str(Path(report.source).resolve()),
            started_at=started_at,
            finished_at=timezone.now(),
            counts=report.counts_dict(),
            warnings=report.warnings,
            unread=report.unread,
        )
        if report.dry_run:
            transaction.set_rollback(True)
        else:
            report.run_id = run.pk
    return True


def _parents_first(threads: list[Thread]) -> list[Thread]:
    """``threads`` ordered so that a fork comes after the thread it was forked from."""
    by_id = {thread.thread_id: thread for thread in threads}
    ordered: list[Thread] = []
    placed: set[str] = set()

    def place(thread: Thread, seen: frozenset[str]) -> None:
        if thread.thread_id in placed:
            return
        parent = by_id.get(thread.parent_id or "")
        if parent is not None and parent.thread_id not in seen:
            place(parent, seen | {thread.thread_id})
        placed.add(thread.thread_id)
        ordered.append(thread)

    for thread in threads:
        place(thread, frozenset({thread.thread_id}))
    return ordered


@dataclass(frozen=True)
class _TakenIn:
    """What chartr holds of a thread: its lines are rows ``first_seq`` .., ``lines`` of them, ``digest`` theirs."""

    first_seq: int
    lines: int
    digest: str


def _import_thread(thread: Thread, report: CodexImportReport) -> None:
    state = CodexThread.objects.select_for_update().filter(agent_id=thread.thread_id).first()
    agent = codex_agent(thread.thread_id)
    if agent is None:
        agent = _create_agent(thread, report)
    taken = _taken_in(thread, agent, state)
    lines = list(thread.lines())
    digest_done, digest_all = _digests([line.record for line in lines], taken.lines)
    if len(lines) < taken.lines or digest_done != taken.digest:
        raise CodexImportInvalid(
            [
                Problem(
                    thread.canonical.relative,
                    "",
                    f"thread {thread.thread_id} no longer begins with the {taken.lines} lines imported before "
                    "(rewritten in place, or a sealed segment is missing); nothing was imported",
                )
            ]
        )
    new = lines[taken.lines :]
    first_seq = taken.first_seq
    if new:
        result = bulk_append_timeline_rows(agent_id=agent.agent_id, rows=_rows(new, thread), allow_archived=True)
        first_seq = result.first_seq if taken.lines == 0 else first_seq
    report.rows.created += len(new)
    report.rows.unchanged += taken.lines
    if new:
        report.rows_by_thread[thread.thread_id] = f"{len(new)} new of {len(lines)} lines"
    _remember(thread, state, agent=agent, first_seq=first_seq, lines=len(lines), digest=digest_all, report=report)
    if thread.archived and not agent.is_archived:
        archive_agent(agent=agent)
        report.archived.append(thread.thread_id)


def _taken_in(thread: Thread, agent: AgentSnapshot, state: CodexThread | None) -> _TakenIn:
    """What chartr holds of ``thread``: as recorded, or, for a Codex agent with no record (an instance
    moved by ``import_instance``), its rows when every one is a Codex record."""
    if state is not None:
        return _TakenIn(state.first_seq, state.lines, state.digest)
    held = agent_codex_records(agent.agent_id) if agent.provider == PROVIDER else None
    if held is None:
        raise CodexImportInvalid(
            [
                Problem(
                    thread.canonical.relative,
                    "1",
                    f"agent {thread.thread_id} already exists and was not imported from Codex; it is left alone",
                )
            ]
        )
    first_seq, records = held
    return _TakenIn(first_seq, len(records), _digests(records, len(records))[0])


def _create_agent(thread: Thread, report: CodexImportReport) -> AgentSnapshot:
    meta = thread.meta
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    remote, branch = git.get("repository_url"), git.get("branch")
    workspace = workspace_for_directory(
        meta["cwd"],
        git_remote=remote if isinstance(remote, str) else None,
        branch=branch if isinstance(branch, str) else None,
    )
    parent = codex_agent(thread.parent_id) if thread.parent_id else None
    if thread.parent_id and parent is None:
        report.warnings.append(
            f"{thread.canonical.relative}: forked from thread {thread.parent_id}, which is neither in this "
            "import nor in chartr; imported without a parent"
        )
    report.threads.created += 1
    return create_agent(
        workspace=workspace,
        provider=PROVIDER,
        agent_id=thread.thread_id,
        cwd=meta["cwd"],
        lifecycle=AgentSnapshot.Lifecycle.CLOSED,
        persistence={"provider": PROVIDER, "sessionId": thread.thread_id},
        parent=parent,
    )


def _digests(records: list[dict], done: int) -> tuple[str, str]:
    """The digest of the first ``done`` records, and of them all: over each record's canonical JSON
    (keys sorted), so a line that is deep-equal (an export read back, whatever its key order) matches."""
    digest = hashlib.sha256()
    before = digest.hexdigest() if done == 0 else ""
    for index, record in enumerate(records, 1):
        digest.update(_canonical(record) + b"\n")
        if index == done:
            before = digest.hexdigest()
    return before, digest.hexdigest()


def _canonical(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _rows(lines: list[Line], thread: Thread) -> list[PendingRow]:
    rows = []
    fallback = _timestamp(thread.meta.get("timestamp")) or timezone.now()
    for line in lines:
        item = foreign_item(NAMESPACE, line.record, line.record.get("type"))
        committed_at = _timestamp(line.record.get("timestamp")) or fallback
        fallback = committed_at
        rows.append(PendingRow(item=item, item_type=item["type"], item_id=None, committed_at=committed_at))
    return rows


def _timestamp(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _remember(
    thread: Thread,
    state: CodexThread | None,
    *,
    agent: AgentSnapshot,
    first_seq: int,
    lines: int,
    digest: str,
    report: CodexImportReport,
) -> None:
    files = [{"path": rollout.relative, "lines": len(rollout.lines)} for rollout in thread.files]
    if state is None:
        CodexThread.objects.create(agent=agent, first_seq=first_seq, lines=lines, digest=digest, files=files)
        return
    if (state.lines, state.digest, state.files) == (lines, digest, files):
        report.threads.unchanged += 1
        return
    state.lines, state.digest, state.files = lines, digest, files
    state.save(update_fields=["lines", "digest", "files", "updated_at"])
    report.threads.updated += 1


def export_codex(*, out: Path | str, progress: Progress | None = None) -> CodexExportReport:
    """Write every imported Codex thread back under ``out``, each rollout at its relative path,
    each line the record that came in (deep-equal JSON). ``out`` must be empty or not exist."""
    progress = progress or no_progress
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CodexExportRefused(f"{out} holds files already: the export goes into an empty or new directory.")
    report = CodexExportReport(out=str(out))
    threads = list(codex_threads())
    for done, state in enumerate(threads, 1):
        progress("writing rollouts", done, len(threads))
        _export_thread(state, out, report)
    return report


def _export_thread(state: CodexThread, out: Path, report: CodexExportReport) -> None:
    records = thread_records(state)
    if len(records) != state.lines:
        report.skipped.append(
            f"{state.agent_id}: its timeline holds {len(records)} of the thread's {state.lines} lines "
            "(trimmed?); not written"
        )
        return
    start = 0
    for entry in state.files:
        path = out / entry["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        chunk = records[start : start + entry["lines"]]
        start += entry["lines"]
        with path.open("w", encoding="utf-8", newline="\n") as handle:
            for record in chunk:
                handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        report.files += 1
        report.lines += len(chunk)
    report.threads += 1
