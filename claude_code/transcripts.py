"""A Claude Code home on disk: which transcripts it holds, and what else is there.

Claude Code writes every session to ``$CLAUDE_CONFIG_DIR/projects/<project key>/<session id>.jsonl``,
one JSON record per line, and a session's subagents to ``<session id>/subagents/**/agent-<id>.jsonl``,
each beside an ``agent-<id>.meta.json`` sidecar (the SDK's ``_internal/sessions.py`` and
``_internal/session_import.py``). The SDK keys a file as ``project_key`` = the project directory's
name, ``session_id`` = the session file's stem, ``subpath`` = the subagent file's path below the
session directory without ``.jsonl`` (``subagents/agent-abc``); ``find_transcripts`` keys them the same.

``find_transcripts`` takes a Claude config home (holding ``projects/``), a projects directory, one
project directory or one session file, and also returns every other entry it saw and did not read,
with why (``SideFile``), so a report can name them all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

TRANSCRIPT_SUFFIX = ".jsonl"
META_SUFFIX = ".meta.json"
SUBAGENTS = "subagents"

#: Why the import leaves an entry of a Claude Code home alone, by name.
SIDE_FILE_REASONS = {
    "tool-results": "large tool outputs kept beside the transcript, which refers to them by path",
    "file-history": "copies of edited files for rewinding (not part of a transcript)",
    "todos": "per-session todo lists, mirrored in the transcript's TodoWrite calls",
    "history.jsonl": "the prompt history across all projects (not a session transcript)",
    "shell-snapshots": "shell environment snapshots",
    "session-env": "per-session environment files",
    "plans": "plan-mode plan files",
    "debug": "debug logs",
    "statsig": "feature-flag cache",
    "ide": "IDE connection lock files",
    "plugins": "installed plugins",
    "commands": "user slash commands",
    "agents": "user subagent definitions",
    "settings.json": "settings",
    "settings.local.json": "settings",
    ".credentials.json": "credentials (never read)",
    "CLAUDE.md": "user memory",
}
DEFAULT_REASON = "not a session transcript"


class NotAClaudeHome(ValueError):
    """The path is none of the four things ``find_transcripts`` takes."""


@dataclass(frozen=True)
class Transcript:
    """One transcript file and the SDK's key for it."""

    path: Path
    project_key: str
    session_id: str
    #: ``""`` for the session's main transcript, else e.g. ``subagents/agent-abc``
    subpath: str = ""

    @property
    def meta_path(self) -> Path | None:
        """A subagent's ``.meta.json`` sidecar (it may not exist); None for a main transcript."""
        if not self.subpath:
            return None
        return self.path.with_name(self.path.name[: -len(TRANSCRIPT_SUFFIX)] + META_SUFFIX)


@dataclass(frozen=True)
class SideFile:
    """An entry of the given path the import does not read, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        suffix = "/" if self.path.is_dir() else ""
        return f"{self.path}{suffix}: {self.reason}"


@dataclass
class Home:
    transcripts: list[Transcript]
    side_files: list[SideFile]


def find_transcripts(source: Path) -> Home:
    """Every transcript under ``source`` (sorted by key, main before its subagents) and every side file."""
    home = Home(transcripts=[], side_files=[])
    if source.is_file():
        if source.suffix != TRANSCRIPT_SUFFIX or source.parent.name == SUBAGENTS:
            raise NotAClaudeHome(f"{source} is not a session transcript (<project>/<session id>.jsonl).")
        _session(source, home, side_files=False)
    elif (source / "projects").is_dir():
        _side_files(source, home, keep={"projects"})
        _projects(source / "projects", home)
    elif source.is_dir() and any(child.suffix == TRANSCRIPT_SUFFIX for child in source.iterdir()):
        _project(source, home)
    elif source.is_dir():
        _projects(source, home)
    else:
        raise NotAClaudeHome(f"{source} does not exist.")
    return home


def _sorted(directory: Path) -> list[Path]:
    return sorted(directory.iterdir(), key=lambda path: path.name)


def _side_files(directory: Path, home: Home, *, keep: set[str]) -> None:
    for child in _sorted(directory):
        if child.name not in keep:
            home.side_files.append(SideFile(child, SIDE_FILE_REASONS.get(child.name, DEFAULT_REASON)))


def _projects(directory: Path, home: Home) -> None:
    for child in _sorted(directory):
        if child.is_dir():
            _project(child, home)
        else:
            home.side_files.append(SideFile(child, "not a project directory"))


def _project(directory: Path, home: Home) -> None:
    sessions = {child.stem for child in directory.iterdir() if child.is_file() and child.suffix == TRANSCRIPT_SUFFIX}
    for child in _sorted(directory):
        if child.is_file() and child.suffix == TRANSCRIPT_SUFFIX:
            _session(child, home, side_files=True)
        elif not (child.is_dir() and child.name in sessions):
            reason = "a session directory without its transcript" if child.is_dir() else DEFAULT_REASON
            home.side_files.append(SideFile(child, reason))


def _session(path: Path, home: Home, *, side_files: bool) -> None:
    """The session file ``path`` and its subagents; the session directory's other entries are side files."""
    project_key, session_id = path.parent.name, path.stem
    home.transcripts.append(Transcript(path, project_key, session_id))
    session_dir = path.with_suffix("")
    if not session_dir.is_dir():
        return
    for child in _sorted(session_dir):
        if child.name == SUBAGENTS and child.is_dir():
            _subagents(child, session_dir, project_key, session_id, home)
        else:
            home.side_files.append(SideFile(child, SIDE_FILE_REASONS.get(child.name, DEFAULT_REASON)))


def _subagents(directory: Path, session_dir: Path, project_key: str, session_id: str, home: Home) -> None:
    for child in _sorted(directory):
        if child.is_dir():
            _subagents(child, session_dir, project_key, session_id, home)
        elif child.name.endswith(TRANSCRIPT_SUFFIX):
            subpath = child.relative_to(session_dir).as_posix()[: -len(TRANSCRIPT_SUFFIX)]
            home.transcripts.append(Transcript(child, project_key, session_id, subpath))
        elif (
            not child.name.endswith(META_SUFFIX)
            or not child.with_name(child.name[: -len(META_SUFFIX)] + TRANSCRIPT_SUFFIX).is_file()
        ):
            home.side_files.append(SideFile(child, DEFAULT_REASON))


def read_meta(transcript: Transcript) -> dict | None:
    """The subagent's sidecar as the SDK reads it: a missing, unreadable or non-object one is absent."""
    meta_path = transcript.meta_path
    if meta_path is None:
        return None
    try:
        value = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
