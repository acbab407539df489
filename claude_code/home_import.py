"""``import_home``: a Claude Code home's transcripts into chartr, through the store's own services.

Every transcript (``claude_code.transcripts.find_transcripts``) is one session key, the SDK's
(``project_key`` = its project directory's name, ``session_id`` = its file's stem, ``subpath`` for a
subagent), in the ``default`` namespace, so an imported session loads through ``ChartrSessionStore``
as a mirrored one does. Each line is one entry, appended by ``claude_code.services.append_entries``;
a subagent's ``.meta.json`` sidecar becomes an ``agent_metadata`` entry, as the SDK's
``import_session_to_store`` makes it.

**Repeatable.** What chartr holds for a key must be the file's first lines (checked whole); only the
lines after them are appended, so a rerun changes nothing and a growing file is topped up. Lines
without ``uuid`` (summaries, titles) are never appended twice because of that, not because of an id.
A file that no longer starts with what chartr holds is refused, naming the first line that differs.

**Bad input** names file and line. A last line without its newline that does not parse is a write
cut short (a session in progress, or a crash): a warning, and the lines before it are imported; the
next run takes it once it is whole. The whole run is one transaction; a dry run rolls it back. A
run that changes something is preceded by a data snapshot (``reason="pre-import"``), as the legacy
import's is, and every committed run leaves a ``ClaudeCodeImportRun``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from claude_code import selectors
from claude_code.keys import DEFAULT_NAMESPACE, SessionKey
from claude_code.models import ClaudeCodeImportRun
from claude_code.services import append_entries
from claude_code.transcripts import NotAClaudeHome, Transcript, find_transcripts, read_meta
from kernel.errors import InputInvalid
from legacy.jsonl import read_lines
from legacy.problems import Problem
from legacy.report import Progress, import_after_snapshot, no_progress
from snapshots.services import update_agent
from timeline.items import contains_nul

#: The synthetic entry a subagent's sidecar becomes (the SDK's ``_split_agent_metadata``).
AGENT_METADATA = "agent_metadata"
APPEND_BATCH = 1000
TITLE_MAX_LENGTH = 512


class ClaudeHomeInvalid(InputInvalid):
    code = "invalid_claude_code_home"
    source = "the transcripts"


@dataclass
class HomeImportReport:
    source: str
    dry_run: bool
    sessions_created: int = 0
    sessions_topped_up: int = 0
    sessions_unchanged: int = 0
    lines_imported: int = 0
    titles_set: int = 0
    transcripts: int = 0
    #: every entry of the source not read, with why
    side_files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    snapshot: str | None = None
    import_run_id: int | None = None

    @property
    def changed_anything(self) -> bool:
        return bool(self.sessions_created or self.sessions_topped_up or self.titles_set)

    def counts(self) -> dict[str, int]:
        names = ("transcripts", "sessions_created", "sessions_topped_up", "sessions_unchanged", "lines_imported")
        return {name: getattr(self, name) for name in (*names, "titles_set")}


@dataclass
class _Read:
    """One transcript's parsed lines (``values``) and what is wrong with it."""

    transcript: Transcript
    values: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def import_home(*, source: Path | str, dry_run: bool = False, progress: Progress | None = None) -> HomeImportReport:
    """Import ``source`` (a Claude config home, projects dir, project dir or session file)."""
    source = Path(source)
    progress = progress or no_progress
    try:
        home = find_transcripts(source)
    except NotAClaudeHome as exc:
        raise ClaudeHomeInvalid(message=str(exc)) from exc
    reads = _read_all(home.transcripts, progress)
    problems = [problem for read in reads for problem in read.problems]
    if problems:
        raise ClaudeHomeInvalid(problems)
    side_files = [str(side) for side in home.side_files]
    return import_after_snapshot(
        source,
        ClaudeCodeImportRun.objects,
        lambda dry_run: HomeImportReport(source=str(source), dry_run=dry_run, side_files=side_files),
        partial(_import_once, reads, progress=progress),
        dry_run=dry_run,
    )


def _read_all(transcripts: list[Transcript], progress: Progress) -> list[_Read]:
    reads = []
    for done, transcript in enumerate(transcripts):
        progress("reading transcripts", done, len(transcripts))
        reads.append(_read(transcript))
    return reads


def _read(transcript: Transcript) -> _Read:
    read = _Read(transcript)
    path = str(transcript.path)
    for line in read_lines(transcript.path):
        if line.truncated:
            read.warnings.append(
                f"{path}:line {line.lineno}: the last line is cut short (a write in progress or a crash); "
                "the lines before it are imported, it will be once it is whole"
            )
        elif line.error is not None:
            read.problems.append(Problem(path, f"line {line.lineno}", line.error))
        elif not isinstance(line.value, dict):
            read.problems.append(Problem(path, f"line {line.lineno}", "a transcript line must be a JSON object"))
        elif contains_nul(line.value):
            read.problems.append(
                Problem(path, f"line {line.lineno}", "contains NUL (\\u0000), which chartr cannot store")
            )
        else:
            read.values.append(line.value)
    if not read.values and not read.problems:
        read.warnings.append(f"{path}: no lines yet, so no session was made for it")
    return read


def _import_once(reads: list[_Read], report: HomeImportReport, only_if_unchanged: bool, *, progress: Progress) -> bool:
    """One run in one transaction; whether it was kept (``only_if_unchanged``: not when it changed anything)."""
    started_at = timezone.now()
    with transaction.atomic():
        for done, read in enumerate(reads):
            progress("importing sessions", done, len(reads))
            _import_transcript(read, report)
        if only_if_unchanged and report.changed_anything:
            transaction.set_rollback(True)
            return False
        run = ClaudeCodeImportRun.objects.create(
            source_path=str(Path(report.source).resolve()),
            started_at=started_at,
            finished_at=timezone.now(),
            counts=report.counts(),
            warnings=[*report.warnings, *(f"{side}: not read" for side in report.side_files)],
        )
        if report.dry_run:
            transaction.set_rollback(True)
        else:
            report.import_run_id = run.pk
    return True


def _import_transcript(read: _Read, report: HomeImportReport) -> None:
    transcript = read.transcript
    report.transcripts += 1
    report.warnings.extend(read.warnings)
    key = SessionKey(transcript.project_key, transcript.session_id, transcript.subpath, DEFAULT_NAMESPACE)
    stored = selectors.load_entries(key) or []
    lines = [entry for entry in stored if entry.get("type") != AGENT_METADATA]
    held = len(lines)
    if held > len(read.values) or lines != read.values[:held]:
        first = next((i for i, (a, b) in enumerate(zip(lines, read.values, strict=False)) if a != b), len(read.values))
        raise ClaudeHomeInvalid(
            [
                Problem(
                    str(transcript.path),
                    f"line {first + 1}",
                    f"chartr holds {held} lines of this session and the file no longer starts with them; "
                    "nothing was imported",
                )
            ]
        )
    new = read.values[held:]
    appended = 0
    for start in range(0, len(new), APPEND_BATCH):
        outcome = append_entries(key, new[start : start + APPEND_BATCH])
        appended += outcome.appended
        for index in outcome.ignored:
            report.warnings.append(
                f"{transcript.path}: line {held + start + index + 1} repeats the uuid of an earlier line; "
                "chartr keeps the first"
            )
    meta_appended = _append_meta(key, transcript, stored)
    if appended or meta_appended:
        report.lines_imported += appended
        if stored:
            report.sessions_topped_up += 1
        else:
            report.sessions_created += 1
    else:
        report.sessions_unchanged += 1
    if transcript.subpath == "" and read.values:
        _set_title(key, title_of(read.values), report)


def _set_title(key: SessionKey, title: str, report: HomeImportReport) -> None:
    title = title[:TITLE_MAX_LENGTH]
    session = selectors.find_session(key)
    if session is None or not title or session.agent.title == title:
        return
    if session.agent.is_archived:
        report.warnings.append(f"{key.project_key}/{key.session_id}: archived, so its title stays as it is")
        return
    update_agent(agent=session.agent, title=title)
    report.titles_set += 1


def _append_meta(key: SessionKey, transcript: Transcript, stored: list[dict]) -> bool:
    meta = read_meta(transcript)
    if meta is None:
        return False
    entry = {**meta, "type": AGENT_METADATA}
    held = [item for item in stored if item.get("type") == AGENT_METADATA]
    if held and held[-1] == entry:
        return False
    append_entries(key, [entry])
    return True


def title_of(records: list[dict]) -> str:
    """The session's title: its last ``custom-title``, else its last ``summary``, else none."""
    for kind, name in (("custom-title", "customTitle"), ("summary", "summary")):
        titles = [r[name] for r in records if r.get("type") == kind and isinstance(r.get(name), str) and r[name]]
        if titles:
            return titles[-1]
    return ""
