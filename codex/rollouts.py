"""Reading a Codex home (``$CODEX_HOME``): its rollout files, grouped into threads, each thread's
segments in order. Nothing here writes.

Codex writes each thread to ``sessions/YYYY/MM/DD/rollout-<timestamp>-<thread id>.jsonl``, one
``RolloutLine`` (``{"timestamp", "ordinal"?, "type", "payload"}``) a line, the first a
``session_meta``; archiving moves the file to ``archived_sessions/``. A newer Codex rotates a live
file: it copies it to an immutable path elsewhere in the home (a sealed segment) and replaces the
live file with a new one that starts with ``session_meta`` and a ``rollout_reference`` whose
``rollout_path`` names the sealed copy. A thread's lines are then its sealed segments' lines, oldest
first, followed by the live file's: what ``Thread.lines`` yields. The reference is an absolute
path of the machine that wrote it, so it is found here by the longest tail of its path that names
a rollout file of this home, wherever the home now lives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.core.exceptions import ValidationError

from codex.report import CodexImportInvalid
from legacy.problems import Problem
from legacy.report import Progress, no_progress
from registry.directories import normalize_directory
from timeline.items import contains_nul

SESSIONS = "sessions"
ARCHIVED_SESSIONS = "archived_sessions"
CANONICAL_DIRS = (SESSIONS, ARCHIVED_SESSIONS)
ROLLOUT_PREFIX = "rollout-"
ROLLOUT_SUFFIX = ".jsonl"

#: Why the import leaves a top-level entry of a Codex home alone.
NOT_READ = {
    "history.jsonl": "the prompt history across threads (message_history), not a thread",
    "session_index.jsonl": "Codex's index of thread names, rebuilt by Codex",
    "config.toml": "Codex's configuration",
    "auth.json": "credentials: never read",
    "version.json": "Codex's update check",
    "installation_id": "Codex's installation id",
    "log": "Codex's logs",
}
SQLITE_REASON = "Codex's own state or log database, which Codex rebuilds from the rollouts"


@dataclass(frozen=True)
class Line:
    number: int
    record: dict


@dataclass
class RolloutFile:
    relative: str
    lines: list[Line]
    #: the ``session_meta`` payload of its first line
    meta: dict

    @property
    def thread_id(self) -> str:
        return self.meta["id"]

    @property
    def canonical(self) -> bool:
        return PurePosixPath(self.relative).parts[0] in CANONICAL_DIRS

    def references(self) -> Iterator[tuple[Line, dict]]:
        for line in self.lines:
            payload = line.record.get("payload")
            if line.record.get("type") == "rollout_reference" and isinstance(payload, dict):
                yield line, payload


@dataclass
class Thread:
    #: oldest sealed segment first, the live (or archived) file last
    files: list[RolloutFile]

    @property
    def canonical(self) -> RolloutFile:
        return self.files[-1]

    @property
    def thread_id(self) -> str:
        return self.canonical.thread_id

    @property
    def meta(self) -> dict:
        return self.canonical.meta

    @property
    def archived(self) -> bool:
        return PurePosixPath(self.canonical.relative).parts[0] == ARCHIVED_SESSIONS

    @property
    def parent_id(self) -> str | None:
        """The thread it was forked from (``forked_from_id``), else the one that spawned it."""
        meta = self.meta
        for value in (meta.get("forked_from_id"), meta.get("parent_thread_id")):
            if isinstance(value, str) and value:
                return value
        spawn = (meta.get("source") or {}) if isinstance(meta.get("source"), dict) else {}
        spawn = spawn.get("subagent") if isinstance(spawn.get("subagent"), dict) else {}
        spawn = spawn.get("thread_spawn") if isinstance(spawn.get("thread_spawn"), dict) else {}
        value = spawn.get("parent_thread_id")
        return value if isinstance(value, str) and value else None

    def lines(self) -> Iterator[Line]:
        for rollout in self.files:
            yield from rollout.lines


@dataclass
class CodexHome:
    source: str
    threads: list[Thread] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def is_rollout_name(name: str) -> bool:
    return name.startswith(ROLLOUT_PREFIX) and name.endswith(ROLLOUT_SUFFIX)


def locate(source: Path) -> tuple[Path | None, list[Path]]:
    """The Codex home ``source`` is in (None for a loose rollout file) and the roots to read threads from."""
    if source.is_file():
        for parent in source.parents:
            if parent.name in CANONICAL_DIRS:
                return parent.parent, [source]
            if any((parent / name).is_dir() for name in CANONICAL_DIRS):
                return parent, [source]  # a sealed segment, in its home
        return None, [source]
    if not source.is_dir():
        raise CodexImportInvalid([Problem(str(source), "", "no such file or directory")])
    if source.name in CANONICAL_DIRS:
        return source.parent, [source]
    if any((source / name).is_dir() for name in CANONICAL_DIRS):
        return source, [source]
    raise CodexImportInvalid(
        [Problem(str(source), "", "not a Codex home: it holds neither sessions/ nor archived_sessions/")]
    )


def relative_path(path: Path, home: Path | None) -> str:
    """``path`` relative to the home; a loose file goes where Codex would have put it (by its date)."""
    if home is not None:
        return path.relative_to(home).as_posix()
    stamp = path.name[len(ROLLOUT_PREFIX) : len(ROLLOUT_PREFIX) + 10]
    year, month, day = (stamp.split("-") + ["", "", ""])[:3]
    if len(year) == 4 and len(month) == 2 and len(day) == 2:
        return f"{SESSIONS}/{year}/{month}/{day}/{path.name}"
    return f"{SESSIONS}/{path.name}"


class _Rollouts:
    """The rollout files of a home by relative path, each read (and checked) the first time it is asked for."""

    def __init__(self, paths: dict[str, Path], problems: list[Problem], home: CodexHome):
        self.paths, self.problems, self.home = paths, problems, home
        self.loaded: dict[str, RolloutFile | None] = {}

    def get(self, relative: str) -> RolloutFile | None:
        if relative not in self.loaded and relative in self.paths:
            self.loaded[relative] = _read_rollout(self.paths[relative], relative, self.problems, self.home)
        return self.loaded.get(relative)


def read_home(source: Path, progress: Progress = no_progress) -> CodexHome:
    """Every thread under ``source`` (a Codex home, its ``sessions/`` or one rollout file), checked:
    the rollouts there, and the sealed segments elsewhere in the home they refer to.

    Raises ``CodexImportInvalid`` naming every bad file and line, having read them all."""
    source = Path(source)
    home, roots = locate(source)
    result = CodexHome(source=str(source))
    problems: list[Problem] = []
    in_scope = _rollout_paths(roots, result)
    everywhere = _rollout_paths([home], CodexHome(source="")) if home is not None else in_scope
    files = _Rollouts({relative_path(path, home): path for path in everywhere + in_scope}, problems, result)
    scoped = sorted({relative_path(path, home) for path in in_scope})
    for done, relative in enumerate(scoped, 1):
        progress("reading rollouts", done, len(scoped))
        files.get(relative)
    result.threads = _threads(files, scoped, problems, result)
    if problems:
        raise CodexImportInvalid(problems)
    if home is not None and source == home:
        read = {relative: rollout for relative, rollout in files.loaded.items() if rollout is not None}
        result.unread.extend(_unread_entries(home, result.threads, read))
    return result


def _rollout_paths(roots: list[Path], home: CodexHome) -> list[Path]:
    found = []
    for root in roots:
        if root.is_file():
            found.append(root)
            continue
        for path in sorted(root.rglob(f"{ROLLOUT_PREFIX}*")):
            if not path.is_file():
                continue
            if is_rollout_name(path.name):
                found.append(path)
            elif path.name.endswith(ROLLOUT_SUFFIX + ".zst"):
                home.unread.append(f"{path}: a compressed rollout; decompress it (zstd -d) and import again")
    return found


def _read_rollout(path: Path, relative: str, problems: list[Problem], home: CodexHome) -> RolloutFile | None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(relative, "", f"cannot be read ({exc.strerror})"))
        return None
    pieces = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        pieces.pop()
    lines = []
    for number, raw in enumerate(pieces, 1):
        if not raw.strip():
            continue
        last_partial = number == len(pieces) and not complete
        record, reason = _parse(raw)
        if reason and last_partial:
            home.warnings.append(
                f"{relative}:{number}: a truncated last line (a write under way?), left for the next run"
            )
            break
        if reason:
            problems.append(Problem(relative, str(number), reason))
            continue
        lines.append(Line(number, record))
    return _with_meta(relative, lines, problems, home)


def _parse(raw: bytes) -> tuple[dict, str]:
    try:
        record = json.loads(raw)
    except UnicodeDecodeError:
        return {}, "not UTF-8"
    except ValueError as exc:
        return {}, f"not JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(record, dict):
        return {}, "not a JSON object (a rollout line is {timestamp, type, payload})"
    if contains_nul(record):
        return {}, "holds a NUL character (\\u0000), which the database cannot store"
    return record, ""


def _with_meta(relative: str, lines: list[Line], problems: list[Problem], home: CodexHome) -> RolloutFile | None:
    if not lines:
        home.unread.append(f"{relative}: empty")
        return None
    first = lines[0]
    payload = first.record.get("payload")
    if first.record.get("type") != "session_meta":
        if "type" not in first.record and "id" in first.record:
            home.unread.append(f"{relative}: the rollout format of Codex before session_meta lines; not read")
        else:
            problems.append(Problem(relative, str(first.number), "a rollout begins with a session_meta line"))
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("id"), str) or not payload["id"]:
        problems.append(Problem(relative, str(first.number), "session_meta has no thread id (payload.id)"))
        return None
    try:
        normalize_directory(payload.get("cwd"))
    except ValidationError as exc:
        problems.append(Problem(relative, str(first.number), f"session_meta's cwd: {' '.join(exc.messages)}"))
        return None
    return RolloutFile(relative=relative, lines=lines, meta=payload)


def _threads(files: dict[str, RolloutFile], scoped: set[str], problems: list[Problem], home: CodexHome) -> list[Thread]:
    threads: dict[str, Thread] = {}
    for relative in sorted(scoped):
        rollout = files.get(relative)
        if rollout is None or not (rollout.canonical or len(scoped) == 1):
            continue
        other = threads.get(rollout.thread_id)
        if other is not None:
            home.unread.append(
                f"{relative}: another rollout of thread {rollout.thread_id} ({other.canonical.relative} is read)"
            )
            continue
        threads[rollout.thread_id] = Thread(files=_segments(rollout, files, problems))
    return list(threads.values())


def _segments(rollout: RolloutFile, files: _Rollouts, problems: list[Problem]) -> list[RolloutFile]:
    """``rollout`` after the sealed segments of its own thread it refers back to, oldest first."""
    chain = [rollout]
    while True:
        predecessor = _predecessor(chain[0], files, problems)
        if predecessor is None or predecessor in chain:
            return chain
        chain.insert(0, predecessor)


def _predecessor(rollout: RolloutFile, files: _Rollouts, problems: list[Problem]) -> RolloutFile | None:
    for line, reference in rollout.references():
        owner = reference.get("thread_id")
        if owner not in (None, rollout.thread_id):
            continue  # another thread's history: that thread's to keep
        found = _find(reference.get("rollout_path"), files)
        if found is None:
            problems.append(
                Problem(
                    rollout.relative,
                    str(line.number),
                    f"refers to the sealed segment {reference.get('rollout_path')!r}, which is not in this "
                    "Codex home: its lines would be a hole in the thread",
                )
            )
            return None
        target = files.get(found)  # None when it is bad: its own problems name it
        if target is None or target.thread_id == rollout.thread_id:
            return target
    return None


def _find(path: object, files: _Rollouts) -> str | None:
    """The relative path of the home's rollout that ``path`` (the writer's absolute path) names."""
    if not isinstance(path, str) or not path:
        return None
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return next(
        (tail for tail in ("/".join(parts[start:]) for start in range(len(parts))) if tail in files.paths), None
    )


def _unread_entries(home: Path, threads: list[Thread], files: dict[str, RolloutFile]) -> list[str]:
    used = {PurePosixPath(rollout.relative).parts[0] for thread in threads for rollout in thread.files}
    chained = {rollout.relative for thread in threads for rollout in thread.files}
    unread = [
        f"{relative}: a sealed segment no thread's file refers to"
        for relative in sorted(files)
        if relative not in chained and PurePosixPath(relative).parts[0] not in CANONICAL_DIRS
    ]
    for entry in sorted(home.iterdir(), key=lambda path: path.name):
        if entry.name in used or entry.name in CANONICAL_DIRS:
            continue
        unread.append(f"{entry.name}: {_why_not_read(entry)}")
    return unread


def _why_not_read(entry: Path) -> str:
    if entry.name in NOT_READ:
        return NOT_READ[entry.name]
    if entry.suffix in (".sqlite", ".db") or ".sqlite" in entry.name:
        return SQLITE_REASON
    return "not a Codex thread"
