"""Every write of a Claude Code transcript: the one path the API, the importer and the hooks share.

The contract (stable: later changes add, never rename):

- ``ensure_session(key, *, cwd=None, lifecycle=IDLE) -> ClaudeCodeSession``: the key's session
  row and agent (``session.agent``), created when missing. The agent id is
  ``claude_code.keys.agent_id_for(key)`` (deterministic), provider ``claude-code``. A subagent key
  (``subpath`` set) makes the main key's session too when missing, and its agent is a child
  (``parent``) of the main one, in the main one's workspace. A main session lands in the workspace
  of ``cwd`` by ``registry.services.workspace_for_directory``; without a cwd, in its namespace's
  holding workspace (``holding_directory``) until an append brings one: then it moves to that cwd's
  workspace, its subagents with it (``snapshots.services.move_agent``). Safe to repeat and to race.
- ``append_entries(key, entries) -> AppendOutcome``: ``entries`` (JSON objects, the transcript lines
  as Claude Code wrote them) appended in order to the key's timeline, each one row whose item is
  ``timeline.items.foreign_item("claude_code", entry, entry.get("type"))``. An entry whose string
  ``uuid`` is already stored under this key, or repeats an earlier entry of the same call, is
  ignored (``AppendOutcome.ignored`` lists their indexes); entries without ``uuid`` are always
  appended. ``[]`` writes nothing and creates nothing. Moves the session's ``mtime_ms``. With
  ``summary=`` and ``summary_version=`` (a fold of every entry of the call), the summary is written
  in the same transaction when nothing was ignored and the version holds (``summary_written``).
- ``delete_session(key) -> bool``: deletes the key's agent (its timeline and row with it); a main
  key's subagents go too (``ON DELETE CASCADE``). False when there was nothing to delete.
- ``write_summary(key, *, data, expected_version) -> Summary``: the summary sidecar of a main key,
  stored verbatim, compare-and-swap on ``Summary.version`` (``VersionMismatch`` with the current
  ``version`` in ``extra`` when another writer got there first; 0 is the version before the first
  write). Its ``mtime_ms`` is the write's time, never below the session's ``mtime_ms``.
- ``carry_over_sessions(*, sessions)``: session rows inserted exactly as an instance export holds
  them (their ids, keys, agents, ``mtime_ms`` and summary with its version and mtime), inside the
  caller's transaction: ``portability``'s import into an empty database, after their agents.

The reads (``load_entries``, ``list_sessions``, ``list_subkeys``, ``get_summary``,
``list_summaries``, ``find_session``) are in ``claude_code.selectors``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from claude_code import selectors
from claude_code.keys import PROVIDER, SessionKey
from claude_code.models import ClaudeCodeSession
from claude_code.selectors import Summary, find_session
from kernel.errors import Conflict, NotFound, VersionMismatch
from kernel.services import insert_carried_over, reset_id_sequences
from registry.directories import is_within, normalize_directory
from registry.services import workspace_for_directory
from snapshots.models import AgentSnapshot
from snapshots.services import create_agent, delete_agent, move_agent
from timeline.errors import ItemConflict
from timeline.items import MAX_ITEM_ID_LENGTH, MAX_ITEMS_PER_APPEND, foreign_item
from timeline.services import NewTimelineItem, append_timeline_items

NAMESPACE = "claude_code"
#: Where a namespace's sessions live while none of their entries has said its cwd.
HOLDING_ROOT = "/claude-code-sessions"
#: Attempts of an append that lost a race for the same uuid with other content.
APPEND_ATTEMPTS = 3

__all__ = [
    "AppendOutcome",
    "append_entries",
    "carry_over_sessions",
    "delete_session",
    "ensure_session",
    "holding_directory",
    "now_ms",
    "write_summary",
]


@dataclass(frozen=True)
class AppendOutcome:
    #: None only for an empty call on a key that was never written.
    session: ClaudeCodeSession | None
    appended: int
    #: Indexes (in the call) of the entries ignored as repeated uuids.
    ignored: tuple[int, ...]
    #: Whether the summary sent along was written (``append_entries(..., summary=...)``).
    summary_written: bool = False


def now_ms() -> int:
    """The storage clock of ``mtime_ms`` and ``summary_mtime_ms``: Unix epoch milliseconds."""
    return int(timezone.now().timestamp() * 1000)


def holding_directory(namespace: str) -> str:
    return f"{HOLDING_ROOT}/{namespace}"


def usable_cwd(value: object) -> str | None:
    """``value`` as an absolute directory, or None when it is none (an entry's or a hook event's ``cwd``)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return normalize_directory(value)
    except ValidationError:
        return None


def entries_cwd(entries: Sequence[dict]) -> str | None:
    """The first usable ``cwd`` the entries carry, else None."""
    return next(filter(None, (usable_cwd(entry.get("cwd")) for entry in entries)), None)


def ensure_session(
    key: SessionKey, *, cwd: str | None = None, lifecycle: str = AgentSnapshot.Lifecycle.IDLE
) -> ClaudeCodeSession:
    found = find_session(key)
    if found is not None:
        return found
    parent = None if key.is_main else ensure_session(key.main(), cwd=cwd, lifecycle=lifecycle)
    try:
        with transaction.atomic():
            return _create_session(key, parent=parent, cwd=cwd, lifecycle=lifecycle)
    except (Conflict, IntegrityError):
        found = find_session(key)  # another writer created it meanwhile
        if found is None:
            raise
        return found


def _create_session(
    key: SessionKey, *, parent: ClaudeCodeSession | None, cwd: str | None, lifecycle: str
) -> ClaudeCodeSession:
    if parent is not None:
        workspace = parent.agent.workspace
    elif cwd is not None:
        workspace = workspace_for_directory(cwd)
    else:
        workspace = workspace_for_directory(holding_directory(key.namespace))
    agent = AgentSnapshot.objects.filter(pk=key.agent_id).first()
    if agent is None:
        agent = create_agent(
            workspace=workspace,
            provider=PROVIDER,
            agent_id=key.agent_id,
            cwd=cwd if cwd is not None and is_within(cwd, workspace.directory) else "",
            lifecycle=lifecycle,
            parent=None if parent is None else parent.agent,
        )
    session = ClaudeCodeSession(
        namespace=key.namespace,
        project_key=key.project_key,
        session_id=key.session_id,
        subpath=key.subpath,
        agent=agent,
    )
    session.save(force_insert=True)
    return session


def _checked_entries(entries: object) -> list[dict]:
    if not isinstance(entries, list | tuple):
        raise ValidationError({"entries": ["Must be a list of JSON objects."]}, code="invalid")
    errors: dict[str, list[str]] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            errors[f"entries[{index}]"] = ["Must be a JSON object."]
            continue
        uuid = entry.get("uuid")
        if "uuid" in entry and not (isinstance(uuid, str) and 0 < len(uuid) <= MAX_ITEM_ID_LENGTH):
            errors[f"entries[{index}].uuid"] = [f"Must be a string of 1 to {MAX_ITEM_ID_LENGTH} characters."]
    if errors:
        raise ValidationError(errors, code="invalid")
    return list(entries)


def append_entries(
    key: SessionKey,
    entries: Sequence[dict[str, Any]],
    *,
    summary: dict | None = None,
    summary_version: int | None = None,
) -> AppendOutcome:
    """``summary``/``summary_version``: the writer's fold of every entry of the call into the summary
    at that version, written in the same transaction only when nothing was ignored and the version
    still holds (``AppendOutcome.summary_written``); otherwise the entries alone are appended and the
    writer folds what was stored into the current summary (``write_summary``)."""
    entries = _checked_entries(entries)
    if summary is not None and (not key.is_main or not isinstance(summary, dict) or summary_version is None):
        raise ValidationError(
            {"summary": ["Send a JSON object with its summary_version, for a main key."]}, code="invalid"
        )
    if not entries:
        return AppendOutcome(session=find_session(key), appended=0, ignored=())
    for attempt in range(APPEND_ATTEMPTS):
        try:
            with transaction.atomic():
                outcome = _append_once(key, entries)
                if summary is not None and not outcome.ignored:
                    written = _swap_summary(outcome.session, summary, summary_version)
                    outcome = dataclasses.replace(outcome, summary_written=written)
                return outcome
        except ItemConflict:
            # The same uuid with other content committed by a concurrent writer after this one
            # looked: the next attempt sees it stored and ignores it.
            if attempt == APPEND_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _append_once(key: SessionKey, entries: list[dict]) -> AppendOutcome:
    cwd = entries_cwd(entries)
    session = ensure_session(key, cwd=cwd)
    if cwd is not None and key.is_main and not session.agent.cwd:
        _place(session, cwd)
    try:
        with transaction.atomic():
            appended, ignored = _append_new(session.agent_id, entries, stored=set())
    except ItemConflict:
        # A uuid already stored with other content: look the call's uuids up and leave them out.
        uuids = [entry["uuid"] for entry in entries if "uuid" in entry]
        appended, ignored = _append_new(
            session.agent_id, entries, stored=selectors.stored_uuids(session.agent_id, uuids)
        )
    if appended:
        stamp = max(now_ms(), session.mtime_ms or 0)
        ClaudeCodeSession.objects.filter(pk=session.pk).update(mtime_ms=stamp)
        session.mtime_ms = stamp
    return AppendOutcome(session=session, appended=appended, ignored=tuple(ignored))


def _append_new(agent_id: str, entries: list[dict], *, stored: set[str]) -> tuple[int, list[int]]:
    """Append the entries whose uuid is neither in ``stored`` nor earlier in the call; (appended, ignored).

    The timeline's idempotent append finds the uuids already committed with the same content itself
    (its one lookup, under the agent's lock): those come back as replays, with a seq at or below the
    head it found, and count as ignored. One committed with other content raises ``ItemConflict``."""
    ignored: list[int] = []
    items: list[NewTimelineItem] = []
    positions: list[int] = []
    seen = set(stored)
    for index, entry in enumerate(entries):
        uuid = entry.get("uuid")
        if uuid is not None:
            if uuid in seen:
                ignored.append(index)
                continue
            seen.add(uuid)
        items.append(NewTimelineItem(item=foreign_item(NAMESPACE, entry, entry.get("type")), item_id=uuid))
        positions.append(index)
    appended = 0
    for start in range(0, len(items), MAX_ITEMS_PER_APPEND):
        result = append_timeline_items(agent_id=agent_id, items=items[start : start + MAX_ITEMS_PER_APPEND])
        head_before = result.head_seq - result.created
        ignored += [positions[start + i] for i, row in enumerate(result.rows) if row.seq <= head_before]
        appended += result.created
    return appended, sorted(ignored)


def _place(session: ClaudeCodeSession, cwd: str) -> None:
    """A session placed before its cwd was known (in the holding workspace) moves to the workspace
    of the first cwd that arrives, its subagents with it."""
    session.agent = move_agent(agent=session.agent, workspace=workspace_for_directory(cwd), cwd=cwd)


def delete_session(key: SessionKey) -> bool:
    with transaction.atomic():
        session = find_session(key)
        if session is None:
            return False
        delete_agent(agent=session.agent)
    return True


def _swap_summary(session: ClaudeCodeSession, data: dict, expected_version: int) -> bool:
    """The compare-and-swap: ``data`` written over version ``expected_version``, or nothing."""
    changed = ClaudeCodeSession.objects.filter(pk=session.pk, summary_version=expected_version).update(
        summary=data,
        summary_version=F("summary_version") + 1,
        summary_mtime_ms=Greatest(Value(now_ms()), Coalesce(F("mtime_ms"), Value(0))),
    )
    return bool(changed)


def write_summary(key: SessionKey, *, data: dict, expected_version: int) -> Summary:
    if not key.is_main:
        raise ValidationError({"subpath": ["A summary belongs to a main transcript (no subpath)."]}, code="invalid")
    if not isinstance(data, dict):
        raise ValidationError({"data": ["Must be a JSON object."]}, code="invalid")
    with transaction.atomic():
        session = find_session(key)
        if session is None or session.mtime_ms is None:
            raise NotFound(f"Session {key.session_id!r} of project {key.project_key!r} has no entries.")
        changed = _swap_summary(session, data, expected_version)
        current = selectors.get_summary(key)
    if not changed:
        version = 0 if current is None else current.version
        raise VersionMismatch(
            f"The summary of session {key.session_id!r} is at version {version}, not {expected_version}.",
            extra={"version": version},
        )
    return current


def carry_over_sessions(*, sessions: Sequence[ClaudeCodeSession]) -> None:
    """Each session's key is checked as the API checks it (``ValidationError`` naming the part);
    the database holds the rest (one session per key and per agent, a summary on a main key only).
    The id sequence then moves past them."""
    for session in sessions:
        SessionKey.checked(
            project_key=session.project_key,
            session_id=session.session_id,
            subpath=session.subpath,
            namespace=session.namespace,
        )
    insert_carried_over(ClaudeCodeSession, list(sessions))
    reset_id_sequences(ClaudeCodeSession)
