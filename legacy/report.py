"""What an import did, counted per kind of record: the value ``import_legacy`` returns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from kernel.data_snapshots import take_data_snapshot

KINDS = ("projects", "workspaces", "agents", "timeline_rows")

#: ``progress(phase, done, total)``, called as a long phase moves on.
Progress = Callable[[str, int, int], None]


def no_progress(phase: str, done: int, total: int) -> None:
    """The ``Progress`` of a caller that shows none."""


def pre_import_snapshot(source, warnings: list[str]) -> str | None:
    """A data snapshot before an import writes (reason ``pre-import``), so the import is one ``restore``
    away from undone; a rerun with nothing new reuses the newest. With snapshots disabled, None, said
    in ``warnings``. Every importer's (legacy, Claude Code, Codex)."""
    snapshot = take_data_snapshot(
        reason="pre-import", note=f"before importing {source}", reuse_unchanged=True, required=False
    )
    if snapshot is None:
        warnings.append("No data snapshot was taken before the import: CHARTR_SNAPSHOTS_KEEP is 0.")
    return snapshot


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
