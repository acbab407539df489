"""What an import did, counted per kind of record: the value ``import_legacy`` returns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.db import connection

from kernel.data_snapshots import take_data_snapshot

KINDS = ("projects", "workspaces", "agents", "timeline_rows")

#: ``progress(phase, done, total)``, called as a long phase moves on.
Progress = Callable[[str, int, int], None]


def no_progress(phase: str, done: int, total: int) -> None:
    """The ``Progress`` of a caller that shows none."""


def import_after_snapshot(source, runs, new_report: Callable, import_once: Callable, *, dry_run: bool):
    """The import of ``source`` into ``new_report(dry_run)`` by ``import_once(report, only_if_unchanged)``
    (one transaction; whether it was kept), every importer's (legacy, Claude Code, Codex).

    A run that writes is preceded by a data snapshot (reason ``pre-import``), taken outside any
    transaction since it copies committed data, so the import is one ``restore`` away from undone;
    with snapshots disabled, None, said in the report's warnings. A rerun (``runs``, the importer's
    run log, holds one) is rehearsed first, rolled back if it would change anything: one that
    changes nothing commits just its run record and takes no snapshot, so reruns never rotate away
    the snapshot that undoes the real import."""
    if not dry_run and not connection.in_atomic_block and runs.exists():
        report = new_report(False)
        if import_once(report, True):
            return report
    report = new_report(dry_run)
    if not dry_run and not connection.in_atomic_block:
        report.snapshot = take_data_snapshot(
            reason="pre-import", note=f"before importing {source}", reuse_unchanged=True, required=False
        )
        if report.snapshot is None:
            report.warnings.append("No data snapshot was taken before the import: CHARTR_SNAPSHOTS_KEEP is 0.")
    import_once(report, False)
    return report


@dataclass
class KindCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0


@dataclass
class ImportReport:
    source: str
    dry_run: bool
    counts: dict[str, KindCounts] = field(default_factory=lambda: {kind: KindCounts() for kind in KINDS})
    #: every invalid file or record left out (only with ``skip_invalid``)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: every top-level entry of the home the import does not read
    unread: list[str] = field(default_factory=list)
    #: "path: skipped, reason" for every history file (or cached history) left out on purpose
    skipped_files: list[str] = field(default_factory=list)
    #: agent id -> what became of its history's rows
    rows_by_agent: dict[str, str] = field(default_factory=dict)
    #: kind -> key -> how many records (or rows) the import wrote with that key in ``extra``
    extra_keys: dict[str, dict[str, int]] = field(default_factory=dict)
    #: "file: seq n: problems" for every imported item stored as a ``legacy_item``
    normalised_items: list[str] = field(default_factory=list)
    #: "file: seqs a..b" for every hole in an imported history's seqs
    holes: list[str] = field(default_factory=list)
    #: live agents the import archived with their archived workspace
    archived_with_workspace: list[str] = field(default_factory=list)
    backup_path: str = ""
    #: The pre-import data snapshot (restoring it undoes the import), or None.
    snapshot: str | None = None
    import_run_id: int | None = None

    def count_extra(self, kind: str, extra: dict | None) -> None:
        """Count the keys of a record (or row) written with ``extra``."""
        if extra:
            self.extra_keys.setdefault(kind, Counter()).update(extra.keys())

    def total(self, column: str) -> int:
        return sum(getattr(counts, column) for counts in self.counts.values())

    def counts_dict(self) -> dict[str, dict[str, int]]:
        return {kind: asdict(counts) for kind, counts in self.counts.items()}

    @property
    def changed_anything(self) -> bool:
        return bool(self.total("created") or self.total("updated"))
