"""Parse and validate the legacy ``projects/*.json`` arrays and ``agents/**.json`` files.

Nothing here touches the database. Every record becomes either a validated
dataclass holding chartr's own values (kinds mapped, directories normalized,
times parsed) or a ``Problem`` naming the file, the array index and the reason.
Keys chartr does not model are kept as they were in the record's ``extra``
(its ids, ``projectId`` and ``workspaceId``, too: chartr matches by directory).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError

from kernel.services import validate_fields
from legacy.problems import Problem, RecordError
from registry.directories import last_segment, normalize_directory
from registry.models import Project, ProjectKind, Workspace, WorkspaceKind
from snapshots.models import AgentSnapshot, AttentionReason, Lifecycle
from timeline.items import contains_nul

#: The activity times a legacy agent record carries for the agent's timeline head.
HEAD_ACTIVITY_FIELDS = ("last_activity_at", "last_user_message_at")

PROJECT_KINDS = {"git": ProjectKind.GIT, "non_git": ProjectKind.DIRECTORY}
WORKSPACE_KINDS = {
    "local_checkout": WorkspaceKind.CHECKOUT,
    "directory": WorkspaceKind.DIRECTORY,
    "worktree": WorkspaceKind.WORKTREE,
}
TMP_AGENT_PREFIX = ".agent.tmp-"
#: The keys of each record chartr models; every other key goes to ``extra``.
PROJECT_KEYS = frozenset({"rootPath", "kind", "displayName", "gitRemote", "createdAt", "updatedAt", "archivedAt"})
WORKSPACE_KEYS = frozenset(
    {"cwd", "kind", "displayName", "branch", "worktreeRoot", "createdAt", "updatedAt", "archivedAt"}
)
AGENT_KEYS = frozenset(
    {
        "id",
        "cwd",
        "provider",
        "title",
        "labels",
        "lastStatus",
        "lastModeId",
        "config",
        "runtimeInfo",
        "persistence",
        "requiresAttention",
        "attentionReason",
        "attentionTimestamp",
        "internal",
        "createdAt",
        "updatedAt",
        "archivedAt",
        "lastActivityAt",
        "lastUserMessageAt",
    }
)


def extra_keys(record: dict, modelled: frozenset[str]) -> dict:
    """The keys of ``record`` chartr does not model, as they were."""
    return {key: value for key, value in record.items() if key not in modelled}


# --- field helpers --------------------------------------------------------


def parse_time(value: Any, name: str, *, required: bool = False) -> dt.datetime | None:
    """An ISO 8601 time; one without an offset is taken as UTC (the legacy
    store wrote ``toISOString()``, which is always UTC)."""
    if value is None:
        if required:
            raise RecordError(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise RecordError(f"{name} must be an ISO 8601 time string, not {type(value).__name__}")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise RecordError(f"{name} is not an ISO 8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed


def _string(record: dict, name: str, *, required: bool = False, default: str = "") -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise RecordError(f"{name} is required")
        return default
    if not isinstance(value, str):
        raise RecordError(f"{name} must be a string, not {type(value).__name__}")
    if required and not value:
        raise RecordError(f"{name} must not be empty")
    return value


def _boolean(record: dict, name: str, *, default: bool = False) -> bool:
    value = record.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RecordError(f"{name} must be true or false")
    return value


def _object(record: dict, name: str) -> dict:
    value = record.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(f"{name} must be a JSON object")
    return value


def _directory(record: dict, name: str) -> str:
    try:
        return normalize_directory(record.get(name))
    except ValidationError as exc:
        raise RecordError(f"{name}: {' '.join(exc.messages)}") from None


def _check_model(instance, *, exclude: list[str]) -> None:
    """The model's own field rules (lengths, choices), so a record that passes
    here never fails on a database constraint later. PostgreSQL cannot store
    U+0000 in text or jsonb at all, so it is refused on every database."""
    values = [getattr(instance, f.attname) for f in instance._meta.concrete_fields if f.name not in exclude]
    if contains_nul(values):
        raise RecordError("contains a NUL character (\\u0000), which chartr cannot store")
    try:
        validate_fields(instance, exclude=exclude)
    except ValidationError as exc:
        reasons = [f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items()]
        raise RecordError("; ".join(reasons)) from None


# --- records --------------------------------------------------------------


@dataclass
class LegacyProject:
    legacy_id: str
    directory: str
    kind: str
    display_name: str
    created_at: dt.datetime
    updated_at: dt.datetime
    archived_at: dt.datetime | None
    git_remote: str = ""
    extra: dict = field(default_factory=dict)
    source_file: str = ""
    location: str = ""

    @property
    def origin(self) -> str:
        return f"{self.source_file}:{self.location}" if self.location else self.source_file


@dataclass
class LegacyWorkspace:
    legacy_id: str
    legacy_project_id: str
    directory: str
    kind: str
    display_name: str
    branch: str
    created_at: dt.datetime
    updated_at: dt.datetime
    archived_at: dt.datetime | None
    worktree_root: str = ""
    extra: dict = field(default_factory=dict)
    source_file: str = ""
    location: str = ""
    project_directory: str = ""

    @property
    def origin(self) -> str:
        return f"{self.source_file}:{self.location}" if self.location else self.source_file


@dataclass
class LegacyAgent:
    agent_id: str
    cwd: str
    created_at: dt.datetime
    updated_at: dt.datetime
    archived_at: dt.datetime | None
    #: Field name -> value, for the fields an update may change: the AgentSnapshot's, and
    #: ``HEAD_ACTIVITY_FIELDS`` for its timeline head (``timeline.services.carry_over_heads``).
    fields: dict[str, Any]
    source_file: str = ""

    @property
    def origin(self) -> str:
        return self.source_file

    @property
    def extra(self) -> dict:
        return self.fields["extra"]


def parse_project(record: Any) -> LegacyProject:
    if not isinstance(record, dict):
        raise RecordError("a project must be a JSON object")
    legacy_id = _string(record, "projectId", required=True)
    directory = _directory(record, "rootPath")
    kind = record.get("kind")
    if kind not in PROJECT_KINDS:
        raise RecordError(f"kind must be one of {', '.join(map(repr, PROJECT_KINDS))}, not {kind!r}")
    project = LegacyProject(
        legacy_id=legacy_id,
        directory=directory,
        kind=PROJECT_KINDS[kind],
        display_name=_string(record, "displayName") or last_segment(directory),
        created_at=parse_time(record.get("createdAt"), "createdAt", required=True),
        updated_at=parse_time(record.get("updatedAt"), "updatedAt", required=True),
        archived_at=parse_time(record.get("archivedAt"), "archivedAt"),
        git_remote=_string(record, "gitRemote"),
        extra=extra_keys(record, PROJECT_KEYS),
    )
    _check_model(
        Project(
            directory=directory,
            kind=project.kind,
            display_name=project.display_name,
            git_remote=project.git_remote,
            extra=project.extra,
        ),
        exclude=["created_at", "updated_at"],
    )
    return project


def parse_workspace(record: Any) -> LegacyWorkspace:
    if not isinstance(record, dict):
        raise RecordError("a workspace must be a JSON object")
    legacy_id = _string(record, "workspaceId", required=True)
    legacy_project_id = _string(record, "projectId", required=True)
    directory = _directory(record, "cwd")
    kind = record.get("kind")
    if kind not in WORKSPACE_KINDS:
        raise RecordError(f"kind must be one of {', '.join(map(repr, WORKSPACE_KINDS))}, not {kind!r}")
    workspace = LegacyWorkspace(
        legacy_id=legacy_id,
        legacy_project_id=legacy_project_id,
        directory=directory,
        kind=WORKSPACE_KINDS[kind],
        display_name=_string(record, "displayName") or last_segment(directory),
        branch=_string(record, "branch"),
        created_at=parse_time(record.get("createdAt"), "createdAt", required=True),
        updated_at=parse_time(record.get("updatedAt"), "updatedAt", required=True),
        archived_at=parse_time(record.get("archivedAt"), "archivedAt"),
        worktree_root=_directory(record, "worktreeRoot") if record.get("worktreeRoot") else "",
        extra=extra_keys(record, WORKSPACE_KEYS),
    )
    _check_model(
        Workspace(
            extra=workspace.extra,
            directory=directory,
            kind=workspace.kind,
            display_name=workspace.display_name,
            branch=workspace.branch,
            worktree_root=workspace.worktree_root,
        ),
        exclude=["project", "created_at", "updated_at"],
    )
    return workspace


def parse_agent(record: Any) -> LegacyAgent:
    if not isinstance(record, dict):
        raise RecordError("an agent file must hold a JSON object")
    agent_id = _string(record, "id", required=True)
    labels = _object(record, "labels")
    if not all(isinstance(key, str) and isinstance(value, str) for key, value in labels.items()):
        raise RecordError("labels must map strings to strings")
    status = record.get("lastStatus")
    lifecycle = Lifecycle.CLOSED if status is None else status
    if lifecycle not in Lifecycle.values:
        raise RecordError(f"lastStatus must be one of {', '.join(Lifecycle.values)}, not {status!r}")
    requires_attention = _boolean(record, "requiresAttention")
    reason = record.get("attentionReason")
    if reason is not None and reason not in AttentionReason.values:
        raise RecordError(f"attentionReason must be one of {', '.join(AttentionReason.values)} or null")
    # Attention without a reason is valid in Paseo's schema, and in chartr.
    archived_at = parse_time(record.get("archivedAt"), "archivedAt")
    cwd = _directory(record, "cwd")
    fields = {
        "cwd": cwd,
        "provider": _string(record, "provider", required=True),
        "title": _string(record, "title"),
        "labels": labels,
        # An archived agent is no longer doing anything; chartr's archive
        # holds the same rule (snapshots.services.archive_agent_rows).
        "lifecycle": Lifecycle.CLOSED if archived_at else lifecycle,
        "last_mode_id": _string(record, "lastModeId"),
        "config": _object(record, "config"),
        "runtime_info": _object(record, "runtimeInfo"),
        "persistence": _object(record, "persistence"),
        "requires_attention": requires_attention,
        # A stale reason on an agent that no longer needs attention is
        # dropped, as snapshots.services does for every write.
        "attention_reason": reason if requires_attention else None,
        "attention_at": parse_time(record.get("attentionTimestamp"), "attentionTimestamp"),
        "internal": _boolean(record, "internal"),
        "last_activity_at": parse_time(record.get("lastActivityAt"), "lastActivityAt"),
        "last_user_message_at": parse_time(record.get("lastUserMessageAt"), "lastUserMessageAt"),
        "extra": extra_keys(record, AGENT_KEYS),
    }
    agent = LegacyAgent(
        agent_id=agent_id,
        cwd=cwd,
        created_at=parse_time(record.get("createdAt"), "createdAt", required=True),
        updated_at=parse_time(record.get("updatedAt"), "updatedAt", required=True),
        archived_at=archived_at,
        fields=fields,
    )
    snapshot = {name: value for name, value in fields.items() if name not in HEAD_ACTIVITY_FIELDS}
    _check_model(AgentSnapshot(agent_id=agent_id, **snapshot), exclude=["workspace", "created_at", "updated_at"])
    return agent


# --- files ----------------------------------------------------------------


def load_json(path: Path) -> Any:
    """The parsed file, or RecordError naming the line of a syntax error."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror}") from None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _JsonSyntax(exc) from None
    except ValueError as exc:  # e.g. an integer longer than Python's 4300-digit limit
        raise RecordError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise RecordError("invalid JSON: nested too deeply") from None


class _JsonSyntax(RecordError):
    def __init__(self, exc: json.JSONDecodeError):
        super().__init__(f"invalid JSON: {exc.msg} (column {exc.colno})")
        self.lineno = exc.lineno


def problem_for(path: Path, error: RecordError, location: str = "") -> Problem:
    if isinstance(error, _JsonSyntax):
        location = f"line {error.lineno}"
    return Problem(str(path), location, str(error))


@dataclass
class ParsedArray:
    records: list = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: array indexes of invalid records, by the legacy id they claimed (if any)
    invalid_ids: set[str] = field(default_factory=set)


def parse_array_file(path: Path, parse, id_key: str) -> ParsedArray:
    result = ParsedArray()
    if not path.exists():
        return result
    try:
        items = load_json(path)
    except RecordError as exc:
        result.problems.append(problem_for(path, exc))
        return result
    if not isinstance(items, list):
        result.problems.append(Problem(str(path), "", f"expected a JSON array, found {type(items).__name__}"))
        return result
    for index, item in enumerate(items):
        try:
            record = parse(item)
        except RecordError as exc:
            result.problems.append(Problem(str(path), f"[{index}]", str(exc)))
            if isinstance(item, dict) and isinstance(item.get(id_key), str):
                result.invalid_ids.add(item[id_key])
            continue
        record.source_file, record.location = str(path), f"[{index}]"
        result.records.append(record)
    return result


def newest_by(records: list, key) -> tuple[dict, list[str]]:
    """Keep, per key, the record with the newest ``updated_at`` (the first one
    on a tie); return the winners and a note for every record they superseded."""
    winners: dict = {}
    notes: list[str] = []
    for record in records:
        current = winners.get(key(record))
        if current is None:
            winners[key(record)] = record
            continue
        newer, older = (record, current) if record.updated_at > current.updated_at else (current, record)
        winners[key(record)] = newer
        notes.append(f"{older.origin}: superseded by the newer {newer.origin}")
    return winners, notes


def agent_files(agents_dir: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """Both layouts: ``agents/<id>.json`` and ``agents/<dir>/<id>.json``.

    Returns (agent files, leftover tmp files, other entries), each sorted so
    that a run is reproducible.
    """
    files: list[Path] = []
    leftovers: list[Path] = []
    others: list[Path] = []
    if not agents_dir.is_dir():
        return files, leftovers, others

    def classify(entry: Path) -> None:
        if entry.name.startswith(TMP_AGENT_PREFIX):
            leftovers.append(entry)
        elif entry.is_file() and entry.suffix == ".json":
            files.append(entry)
        else:
            others.append(entry)

    for entry in sorted(agents_dir.iterdir()):
        if entry.is_dir() and not entry.name.startswith(TMP_AGENT_PREFIX):
            for nested in sorted(entry.iterdir()):
                classify(nested)
        else:
            classify(entry)
    return files, leftovers, others


def iter_agent_records(paths: list[Path]) -> Iterator[tuple[Path, LegacyAgent | None, Problem | None]]:
    for path in paths:
        try:
            agent = parse_agent(load_json(path))
        except RecordError as exc:
            yield path, None, problem_for(path, exc)
            continue
        agent.source_file = str(path)
        yield path, agent, None
