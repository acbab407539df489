"""What an import of a Codex home did, and what was wrong with it, said with the file and line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kernel.errors import ChartrError, InputInvalid


class CodexImportInvalid(InputInvalid):
    code = "invalid_codex_data"
    source = "the Codex home"


class CodexExportRefused(ChartrError):
    """The export's output directory is not empty; nothing was written."""

    code = "export_refused"
    status = 409
    in_api = False


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass
class CodexImportReport:
    source: str
    dry_run: bool
    #: threads (agents and their bookkeeping) and rows (one per rollout line)
    threads: Counts = field(default_factory=Counts)
    rows: Counts = field(default_factory=Counts)
    #: thread id -> how many of its lines this run brought (threads it brought some of)
    rows_by_thread: dict[str, str] = field(default_factory=dict)
    #: threads archived by this run (their rollout is in archived_sessions/)
    archived: list[str] = field(default_factory=list)
    #: "entry: why" for every part of the home not read
    unread: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    run_id: int | None = None
    #: the data snapshot taken before the run (None: none taken)
    snapshot: str | None = None

    @property
    def changed_anything(self) -> bool:
        return bool(self.threads.created or self.threads.updated or self.rows.created or self.archived)

    def counts_dict(self) -> dict[str, dict[str, int]]:
        return {
            "threads": asdict(self.threads),
            "rows": asdict(self.rows),
            "archived": {"archived": len(self.archived)},
        }


@dataclass
class CodexExportReport:
    out: str
    threads: int = 0
    files: int = 0
    lines: int = 0
    #: threads not written, and why
    skipped: list[str] = field(default_factory=list)
