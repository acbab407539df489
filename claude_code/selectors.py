"""The reads of Claude Code transcripts: each answers in one or a few queries, whatever a history's length.

- ``find_session(key)``: the key's session row with its agent (and workspace), or None;
- ``written_agent_id(key)``: the key's agent id once something was appended to it, else None;
- ``load_entries(key)``: the entries in append order (deep-equal to what was appended), or None
  for a key nothing was appended to;
- ``list_sessions(namespace, project_key)``: the project's main transcripts with their ``mtime_ms``;
- ``list_subkeys(namespace, project_key, session_id)``: the session's subpaths;
- ``get_summary(key)`` / ``list_summaries(namespace, project_key)``: the summary sidecars written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from claude_code.keys import SessionKey
from claude_code.models import ClaudeCodeSession
from timeline.models import TimelineRow


@dataclass(frozen=True)
class Summary:
    session_id: str
    mtime_ms: int
    data: dict
    version: int


@dataclass(frozen=True)
class SessionListing:
    session_id: str
    mtime_ms: int


def _by_key(key: SessionKey):
    return ClaudeCodeSession.objects.filter(
        namespace=key.namespace, project_key=key.project_key, session_id=key.session_id, subpath=key.subpath
    )


def find_session(key: SessionKey) -> ClaudeCodeSession | None:
    return _by_key(key).select_related("agent", "agent__workspace").first()


def stored_uuids(agent_id: str, uuids: Iterable[str]) -> set[str]:
    """Which of ``uuids`` the agent's timeline already holds (as row ``item_id``)."""
    wanted = list(dict.fromkeys(uuids))
    if not wanted:
        return set()
    found = TimelineRow.objects.filter(agent_id=agent_id, item_id__in=wanted).values_list("item_id", flat=True)
    return set(found)


def written_agent_id(key: SessionKey) -> str | None:
    """The agent of ``key`` when something was appended to it, else None (what ``load`` answers None for)."""
    return _by_key(key).filter(mtime_ms__isnull=False).values_list("agent_id", flat=True).first()


def load_entries(key: SessionKey) -> list[dict] | None:
    session = written_agent_id(key)
    if session is None:
        return None
    items = TimelineRow.objects.filter(agent_id=session).order_by("seq").values_list("item", flat=True)
    return [item["record"] for item in items.iterator(chunk_size=2000)]


def list_sessions(namespace: str, project_key: str) -> list[SessionListing]:
    rows = ClaudeCodeSession.objects.filter(
        namespace=namespace, project_key=project_key, subpath="", mtime_ms__isnull=False
    ).values_list("session_id", "mtime_ms")
    return [SessionListing(session_id, mtime_ms) for session_id, mtime_ms in rows.order_by("session_id")]


def list_subkeys(namespace: str, project_key: str, session_id: str) -> list[str]:
    rows = (
        ClaudeCodeSession.objects.filter(
            namespace=namespace, project_key=project_key, session_id=session_id, mtime_ms__isnull=False
        )
        .exclude(subpath="")
        .order_by("subpath")
        .values_list("subpath", flat=True)
    )
    return list(rows)


def _summaries(queryset) -> list[Summary]:
    rows = queryset.filter(subpath="", summary__isnull=False).values_list(
        "session_id", "summary_mtime_ms", "summary", "summary_version"
    )
    return [Summary(*row) for row in rows.order_by("session_id")]


def get_summary(key: SessionKey) -> Summary | None:
    found = _summaries(_by_key(key))
    return found[0] if found else None


def list_summaries(namespace: str, project_key: str) -> list[Summary]:
    return _summaries(ClaudeCodeSession.objects.filter(namespace=namespace, project_key=project_key))
