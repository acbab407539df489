"""``export_home``: a namespace's Claude Code sessions back to files laid out as Claude Code lays them.

``<out>/projects/<project_key>/<session_id>.jsonl`` for a session, ``<session_id>/<subpath>.jsonl``
beside it for each subagent, and the subagent's last ``agent_metadata`` entry (without its
synthetic ``type``) as its ``.meta.json`` sidecar, as the SDK's ``materialize_resume_session``
writes them. One entry is one line, compact JSON as Claude Code writes it: every line is deep-equal
to the one imported or mirrored. Imported and mirrored sessions are the same rows
(``claude_code.selectors.load_entries``), so they export alike.

A key that cannot be a file name (a caller-defined project key or session id with ``/``, or ``.``
or ``..``) is not written: the report names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from claude_code import selectors
from claude_code.home_import import AGENT_METADATA
from claude_code.keys import DEFAULT_NAMESPACE, SessionKey
from claude_code.models import ClaudeCodeSession
from claude_code.transcripts import META_SUFFIX, TRANSCRIPT_SUFFIX
from kernel.files import replaced_atomically
from legacy.report import Progress, no_progress


@dataclass
class HomeExportReport:
    out: str
    sessions: int = 0
    subagents: int = 0
    lines: int = 0
    #: keys not written, with why
    skipped: list[str] = field(default_factory=list)


def _segment_ok(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def export_home(
    *, out: Path | str, namespace: str = DEFAULT_NAMESPACE, progress: Progress | None = None
) -> HomeExportReport:
    """Write every session of ``namespace`` under ``out``; returns what was written."""
    out = Path(out)
    progress = progress or no_progress
    report = HomeExportReport(out=str(out))
    keys = list(
        ClaudeCodeSession.objects.filter(namespace=namespace, mtime_ms__isnull=False)
        .order_by("project_key", "session_id", "subpath")
        .values_list("project_key", "session_id", "subpath")
    )
    for done, (project_key, session_id, subpath) in enumerate(keys):
        progress("exporting transcripts", done, len(keys))
        if not (_segment_ok(project_key) and _segment_ok(session_id)):
            report.skipped.append(f"{project_key!r} {session_id!r}: not a file name, so not written")
            continue
        key = SessionKey(project_key, session_id, subpath, namespace)
        _export_key(key, out / "projects" / project_key, report)
    return report


def _export_key(key: SessionKey, project_dir: Path, report: HomeExportReport) -> None:
    entries = selectors.load_entries(key) or []
    if key.is_main:
        path = project_dir / f"{key.session_id}{TRANSCRIPT_SUFFIX}"
        report.sessions += 1
    else:
        path = project_dir / key.session_id / f"{key.subpath}{TRANSCRIPT_SUFFIX}"
        report.subagents += 1
    lines = [entry for entry in entries if key.is_main or entry.get("type") != AGENT_METADATA]
    _write(path, "".join(_line(entry) for entry in lines))
    report.lines += len(lines)
    metas = [entry for entry in entries if not key.is_main and entry.get("type") == AGENT_METADATA]
    if metas:
        meta = {name: value for name, value in metas[-1].items() if name != "type"}
        _write(path.with_name(path.name[: -len(TRANSCRIPT_SUFFIX)] + META_SUFFIX), json.dumps(meta))


def _line(entry: dict) -> str:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"


def _write(path: Path, text: str) -> None:
    """Write ``text`` whole or not at all, owner-only (``kernel.files.replaced_atomically``: its file is 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path, sync=False) as tmp:
        tmp.write_text(text, encoding="utf-8")
