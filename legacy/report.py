"""What an import did, counted per kind of record: the value ``import_legacy`` returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("projects", "workspaces", "agents", "timeline_rows")

#: ``progress(phase, done, total)``, called as a long phase moves on.
Progress = Callable[[str, int, int], None]


def no_progress(phase: str, done: int, total: int) -> None:
    """The ``Progress`` of a caller that shows none."""


@dataclass
class KindCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "unchanged": self.unchanged, "skipped": self.skipped}


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
    backup_path: str = ""
    #: The pre-import data snapshot (restoring it undoes the import), or None.
    snapshot: str | None = None
    import_run_id: int | None = None

    def total(self, column: str) -> int:
        return sum(getattr(counts, column) for counts in self.counts.values())

    def counts_dict(self) -> dict[str, dict[str, int]]:
        return {kind: counts.as_dict() for kind, counts in self.counts.items()}

    @property
    def changed_anything(self) -> bool:
        return bool(self.total("created") or self.total("updated"))
