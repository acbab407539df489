"""``import_legacy``: the one write path that brings a legacy home directory into chartr.

The whole run is one transaction:

1. **Check** every file and record, writing nothing (``legacy.scan``). Any
   problem aborts the run, unless ``skip_invalid`` is set, in which case the
   invalid records (and whatever depends on them) are left out and listed.
2. **Write** projects, workspaces and agents with batched bulk operations
   (``legacy.write``), then the timeline rows through the timeline's own bulk
   append: chartr's JSONL files (``legacy.timelines``) and Paseo's own
   history stores (``legacy.paseo``, ``legacy.histories``). A dry run rolls
   it all back. Once the import commits, the timeline table's planner
   statistics are refreshed (``timeline.reads.planner_statistics``; PostgreSQL's
   ``ANALYZE``) when it added rows.
0. **Snapshot** the data before anything else, a rerun rehearsed first
   (``legacy.report.import_after_snapshot``).
3. **Back up** the input files to ``<data dir>/backup/pre-migration/<timestamp>/``,
   only when the import changed something, still inside the transaction so a
   failed copy imports nothing (``legacy.backup``; never in a dry run, which
   leaves nothing behind at all). Then the ``ImportRun`` record.

How records are matched and updated is ``legacy.write``'s; how timelines continue, ``legacy.timelines``'s.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from pathlib import Path

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from kernel.errors import Conflict
from kernel.services import insert_carried_over, reset_id_sequences
from legacy.backup import back_up_source, discard_backup
from legacy.histories import write_histories
from legacy.models import ImportRun
from legacy.report import ImportReport, Progress, import_after_snapshot, no_progress
from legacy.scan import check_source, scan_home
from legacy.timelines import write_timelines
from legacy.write import write_records
from timeline.reads.planner_statistics import refresh_timeline_statistics


def import_legacy(
    *,
    source: Path | str,
    skip_invalid: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the legacy directory ``source``; raise ``LegacyImportInvalid`` (nothing written) on bad input."""
    source = Path(source)
    check_source(source)
    progress = progress or no_progress

    def new_report(dry_run: bool) -> ImportReport:
        report = ImportReport(source=str(source), dry_run=dry_run)
        if not dry_run and connection.in_atomic_block:  # a snapshot could not see the caller's writes
            report.warnings.append("No data snapshot was taken before the import: it ran inside a transaction.")
        return report

    import_once = partial(_import_once, source, skip_invalid=skip_invalid, progress=progress)
    return import_after_snapshot(source, ImportRun.objects, new_report, import_once, dry_run=dry_run)


def _import_once(
    source: Path, report: ImportReport, only_if_unchanged: bool, *, skip_invalid: bool, progress: Progress
) -> bool:
    """One run of the import, in one transaction; whether it was kept.

    ``only_if_unchanged``: a run that would change anything is rolled back
    (False), so that the caller can snapshot first and run it again.
    """
    started_at = timezone.now()
    backup: Path | None = None
    try:
        with transaction.atomic():
            plan = scan_home(source, report, skip_invalid=skip_invalid, progress=progress)
            try:
                progress("writing records", 0, 1)
                write_records(plan, report)
                write_timelines(plan.timelines.values(), report, progress=progress)
                write_histories(plan.histories.values(), report, progress=progress)
            except IntegrityError as exc:
                raise Conflict(f"The database refused the import ({exc}); nothing was imported.") from exc
            if only_if_unchanged and report.changed_anything:
                transaction.set_rollback(True)
                return False
            if report.counts["timeline_rows"].created and not report.dry_run:
                # Once committed, so the sample holds the imported rows: page reads must not wait
                # for autovacuum to plan them off the (agent, seq) index (timeline/reads/planner_statistics.py).
                transaction.on_commit(refresh_timeline_statistics)
            if report.changed_anything and not report.dry_run:
                progress("backing up the input", 0, 1)
                backup = back_up_source(source, started_at)
                report.backup_path = str(backup)
            run = _record_run(report, started_at=started_at)
            if report.dry_run:
                transaction.set_rollback(True)
            else:
                report.import_run_id = run.pk
    except BaseException:
        # Nothing was imported, so the copy protects nothing.
        if backup is not None:
            discard_backup(backup)
        raise
    return True


def _record_run(report: ImportReport, *, started_at: dt.datetime) -> ImportRun:
    return ImportRun.objects.create(
        source_path=str(Path(report.source).resolve()),
        backup_path=report.backup_path,
        started_at=started_at,
        finished_at=timezone.now(),
        counts=report.counts_dict(),
        skipped=[*report.skipped, *report.skipped_files],
        warnings=[
            *report.warnings,
            *report.holes,
            *report.normalised_items,
            *(
                f"{kind}: key {key!r} kept in extra on {n}"
                for kind, keys in report.extra_keys.items()
                for key, n in keys.items()
            ),
            *(f"{entry}: not read" for entry in report.unread),
        ],
    )


def carry_over_import_runs(*, runs: list[ImportRun]) -> None:
    """Insert the log of legacy imports as an instance export holds it, inside the caller's transaction."""
    insert_carried_over(ImportRun, list(runs))
    reset_id_sequences(ImportRun)
