"""Parse and validate the legacy ``projects/*.json`` arrays and ``agents/**.json`` files.

Nothing here touches the database. Every record becomes either a validated
dataclass holding chartr's own values (kinds mapped, directories normalized,
times parsed) or a ``Problem`` naming the file, the array index and the reason.
Keys chartr does not model are kept as they were in the record's ``extra``
(its ids, ``projectId`` and ``workspaceId``, too: chartr matches by directory).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError

from kernel.services import validate_fields
from legacy.located import Checks, RecordErrors, load_json, problems_of
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
#: The legacy key of each field of an agent: its AgentSnapshot's, and its timeline head's activity times.
AGENT_FIELD_KEYS = {
    "agent_id": "id",
    "cwd": "cwd",
    "provider": "provider",
    "title": "title",
    "labels": "labels",
    "lifecycle": "lastStatus",
    "last_mode_id": "lastModeId",
    "config": "config",
    "runtime_info": "runtimeInfo",
    "persistence": "persistence",
    "requires_attention": "requiresAttention",
    "attention_reason": "attentionReason",
    "attention_at": "attentionTimestamp",
    "internal": "internal",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
    "archived_at": "archivedAt",
    "last_activity_at": "lastActivityAt",
    "last_user_message_at": "lastUserMessageAt",
}
AGENT_KEYS = frozenset(AGENT_FIELD_KEYS.values())


def extra_keys(record: dict, modelled: frozenset[str]) -> dict:
    """The keys of ``record`` chartr does not model, as they were."""
    return {key: value for key, value in record.items() if key not in modelled}


# --- field helpers --------------------------------------------------------


def parse_time(record: dict, name: str, *, required: bool = False) -> dt.datetime | None:
    """An ISO 8601 time; one without an offset is taken as UTC (the legacy
    store wrote ``toISOString()``, which is always UTC)."""
    value = record.get(name)
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
        return normalize_directory(_string(record, name, required=True))
    except ValidationError as exc:
        raise RecordError(f"{name}: {' '.join(exc.messages)}") from None


def _check_model(instance, *, exclude: list[str], keys: dict[str, str]) -> None:
    """The model's own field rules (lengths, choices), so a record that passes
    here never fails on a database constraint later, each said of the record's
    key (``keys``: model field -> legacy key). A NUL was refused before, with
    its key (``_checks``)."""
    try:
        validate_fields(instance, exclude=exclude)
    except ValidationError as exc:
        raise RecordErrors(
            [
                ((keys.get(name, name),), f"{keys.get(name, name)}: {' '.join(messages)}")
                for name, messages in exc.message_dict.items()
            ]
        ) from None


# --- records --------------------------------------------------------------


@dataclass(kw_only=True)
class _Record:
    """What every legacy record has: its times, and where it was read (``location``: its index in
    the file's array, empty for a record that is a file of its own)."""

    created_at: dt.datetime
    updated_at: dt.datetime
    archived_at: dt.datetime | None
    source_file: str = ""
    location: str = ""

    @property
    def origin(self) -> str:
        return f"{self.source_file}:{self.location}" if self.location else self.source_file


@dataclass
class LegacyProject(_Record):
    legacy_id: str
    directory: str
    kind: str
    display_name: str
    git_remote: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class LegacyWorkspace(_Record):
    legacy_id: str
    legacy_project_id: str
    directory: str
    kind: str
    display_name: str
    branch: str
    worktree_root: str = ""
    extra: dict = field(default_factory=dict)
    project_directory: str = ""


@dataclass
class LegacyAgent(_Record):
    agent_id: str
    cwd: str
    #: Field name -> value, for the fields an update may change: the AgentSnapshot's, and
    #: ``HEAD_ACTIVITY_FIELDS`` for its timeline head (``timeline.services.carry_over_heads``).
    fields: dict[str, Any]

    @property
    def extra(self) -> dict:
        return self.fields["extra"]


#: The fields a legacy project or workspace carries into chartr's, beside its directory, times and archive.
PROJECT_FIELDS = ("kind", "display_name", "git_remote", "extra")
WORKSPACE_FIELDS = ("kind", "display_name", "branch", "worktree_root", "extra")


def _checks(record: dict) -> Checks:
    """The checks of a record, started with the keys holding a NUL (PostgreSQL cannot store
    U+0000 in text or jsonb, so it is refused on every database)."""
    checks = Checks()
    for key, value in record.items():
        if contains_nul(key) or contains_nul(value):
            name = key.replace("\x00", "\\u0000")
            checks.fail(key, f"{name} contains a NUL character (\\u0000), which chartr cannot store")
    return checks


def parse_project(record: Any) -> LegacyProject:
    if not isinstance(record, dict):
        raise RecordError("a project must be a JSON object")
    checks = _checks(record)
    legacy_id = checks.run("projectId", _string, record, "projectId", required=True)
    directory = checks.run("rootPath", _directory, record, "rootPath")
    kind = checks.run("kind", _kind, record, PROJECT_KINDS)
    display_name = checks.run("displayName", _string, record, "displayName")
    times = _times(checks, record)
    git_remote = checks.run("gitRemote", _string, record, "gitRemote")
    checks.raise_any()
    project = LegacyProject(
        legacy_id=legacy_id,
        directory=directory,
        kind=kind,
        display_name=display_name or last_segment(directory),
        **times,
        git_remote=git_remote,
        extra=extra_keys(record, PROJECT_KEYS),
    )
    _check_model(
        Project(directory=directory, **{name: getattr(project, name) for name in PROJECT_FIELDS}),
        exclude=["created_at", "updated_at"],
        keys={"directory": "rootPath", "display_name": "displayName", "git_remote": "gitRemote"},
    )
    return project


def _kind(record: dict, kinds: dict[str, str]) -> str:
    kind = record.get("kind")
    if kind not in kinds:
        raise RecordError(f"kind must be one of {', '.join(map(repr, kinds))}, not {kind!r}")
    return kinds[kind]


def _times(checks: Checks, record: dict) -> dict[str, dt.datetime | None]:
    """A record's createdAt, updatedAt (both required) and archivedAt."""
    return {
        "created_at": checks.run("createdAt", parse_time, record, "createdAt", required=True),
        "updated_at": checks.run("updatedAt", parse_time, record, "updatedAt", required=True),
        "archived_at": checks.run("archivedAt", parse_time, record, "archivedAt"),
    }


def parse_workspace(record: Any) -> LegacyWorkspace:
    if not isinstance(record, dict):
        raise RecordError("a workspace must be a JSON object")
    checks = _checks(record)
    legacy_id = checks.run("workspaceId", _string, record, "workspaceId", required=True)
    legacy_project_id = checks.run("projectId", _string, record, "projectId", required=True)
    directory = checks.run("cwd", _directory, record, "cwd")
    kind = checks.run("kind", _kind, record, WORKSPACE_KINDS)
    display_name = checks.run("displayName", _string, record, "displayName")
    branch = checks.run("branch", _string, record, "branch")
    times = _times(checks, record)
    worktree_root = checks.run("worktreeRoot", _directory, record, "worktreeRoot") if record.get("worktreeRoot") else ""
    checks.raise_any()
    workspace = LegacyWorkspace(
        legacy_id=legacy_id,
        legacy_project_id=legacy_project_id,
        directory=directory,
        kind=kind,
        display_name=display_name or last_segment(directory),
        branch=branch,
        **times,
        worktree_root=worktree_root,
        extra=extra_keys(record, WORKSPACE_KEYS),
    )
    _check_model(
        Workspace(directory=directory, **{name: getattr(workspace, name) for name in WORKSPACE_FIELDS}),
        exclude=["project", "created_at", "updated_at"],
        keys={"directory": "cwd", "display_name": "displayName", "worktree_root": "worktreeRoot"},
    )
    return workspace


def _labels(record: dict) -> dict:
    labels = _object(record, "labels")
    if not all(isinstance(key, str) and isinstance(value, str) for key, value in labels.items()):
        raise RecordError("labels must map strings to strings")
    return labels


def _lifecycle(record: dict) -> str:
    status = record.get("lastStatus")
    lifecycle = Lifecycle.CLOSED if status is None else status
    if lifecycle not in Lifecycle.values:
        raise RecordError(f"lastStatus must be one of {', '.join(Lifecycle.values)}, not {status!r}")
    return lifecycle


def _reason(record: dict) -> str | None:
    # Attention without a reason is valid in Paseo's schema, and in chartr.
    reason = record.get("attentionReason")
    if reason is not None and reason not in AttentionReason.values:
        raise RecordError(f"attentionReason must be one of {', '.join(AttentionReason.values)} or null")
    return reason


def parse_agent(record: Any) -> LegacyAgent:
    if not isinstance(record, dict):
        raise RecordError("an agent file must hold a JSON object")
    checks = _checks(record)
    agent_id = checks.run("id", _string, record, "id", required=True)
    times = _times(checks, record)
    requires_attention = checks.run("requiresAttention", _boolean, record, "requiresAttention")
    lifecycle = checks.run("lastStatus", _lifecycle, record)
    reason = checks.run("attentionReason", _reason, record)
    fields = {
        "cwd": checks.run("cwd", _directory, record, "cwd"),
        "provider": checks.run("provider", _string, record, "provider", required=True),
        "title": checks.run("title", _string, record, "title"),
        "labels": checks.run("labels", _labels, record),
        # An archived agent is no longer doing anything; chartr's archive
        # holds the same rule (snapshots.services.archive_agent_rows).
        "lifecycle": Lifecycle.CLOSED if times["archived_at"] else lifecycle,
        "last_mode_id": checks.run("lastModeId", _string, record, "lastModeId"),
        "config": checks.run("config", _object, record, "config"),
        "runtime_info": checks.run("runtimeInfo", _object, record, "runtimeInfo"),
        "persistence": checks.run("persistence", _object, record, "persistence"),
        "requires_attention": requires_attention,
        # A stale reason on an agent that no longer needs attention is
        # dropped, as snapshots.services does for every write.
        "attention_reason": reason if requires_attention else None,
        "attention_at": checks.run("attentionTimestamp", parse_time, record, "attentionTimestamp"),
        "internal": checks.run("internal", _boolean, record, "internal"),
        "last_activity_at": checks.run("lastActivityAt", parse_time, record, "lastActivityAt"),
        "last_user_message_at": checks.run("lastUserMessageAt", parse_time, record, "lastUserMessageAt"),
        "extra": extra_keys(record, AGENT_KEYS),
    }
    checks.raise_any()
    agent = LegacyAgent(agent_id=agent_id, cwd=fields["cwd"], **times, fields=fields)
    snapshot = {name: value for name, value in fields.items() if name not in HEAD_ACTIVITY_FIELDS}
    _check_model(
        AgentSnapshot(agent_id=agent_id, **snapshot),
        exclude=["workspace", "created_at", "updated_at"],
        keys=AGENT_FIELD_KEYS,
    )
    return agent


# --- files ----------------------------------------------------------------


def newest_by(records: list, key, notes: list[str]) -> dict:
    """Keep, per key, the record with the newest ``updated_at`` (the first one
    on a tie); return the winners, adding to ``notes`` one for every record they superseded."""
    winners: dict = {}
    for record in records:
        current = winners.get(key(record))
        if current is None:
            winners[key(record)] = record
            continue
        newer, older = (record, current) if record.updated_at > current.updated_at else (current, record)
        winners[key(record)] = newer
        notes.append(f"{older.origin}: superseded by the newer {newer.origin}")
    return winners


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


def iter_agent_records(paths: list[Path]) -> Iterator[tuple[Path, LegacyAgent | None, list[Problem]]]:
    """Each agent file's record, or every problem it has, each on its line."""
    for path in paths:
        try:
            agent = parse_agent(load_json(path))
        except RecordError as exc:
            yield path, None, problems_of(path, exc)
            continue
        agent.source_file = str(path)
        yield path, agent, []
