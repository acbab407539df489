"""Every API read of an instance, for comparing two instances: the lists (every page, archived
or not), each agent and each timeline (every row, the projected view, the last item and message),
and the Claude Code sessions of the built instance as a SessionStore reads them.

``get(path)`` answers ``(status, json)``; no Django import, so the process test uses it too."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

Get = Callable[[str], tuple[int, object]]
LISTS = ("projects", "workspaces", "agents")
#: The Claude Code project of the built instance (``tests.portability.builders``) and its sessions.
CLAUDE_CODE_PROJECT = "-srv-code-app"
CLAUDE_CODE_SESSIONS = ("s1", "s2")
#: The reads of the built instance that answer 404: s2's summary and load (only its subagent was appended to).
NOT_FOUND = frozenset(
    f"/api/v1/claude-code/session/{path}?project_key={CLAUDE_CODE_PROJECT}&session_id=s2"
    for path in ("summary", "entries")
)


def failed(reads: dict[str, object]) -> set[str]:
    """The paths of ``reads`` that did not answer 200."""
    return {path for path, read in reads.items() if isinstance(read, tuple) and read[0] != 200}


def _pages(get: Get, path: str) -> list:
    results, cursor = [], None
    while True:
        status, body = get(path + (f"&cursor={quote(cursor)}" if cursor else ""))
        assert status == 200, (path, status, body)
        results.extend(body["results"])
        cursor = body["next_cursor"]
        if cursor is None:
            return results


def every_read(get: Get) -> dict[str, object]:
    reads: dict[str, object] = {}
    for name in LISTS:
        path = f"/api/v1/{name}?archived=all&limit=2"
        reads[path] = _pages(get, path)
    for agent in reads["/api/v1/agents?archived=all&limit=2"]:
        base = f"/api/v1/agents/{quote(agent['agent_id'], safe='')}"
        for path in (
            base,
            base + "/timeline?direction=after&limit=0",
            base + "/timeline?direction=tail&limit=2",
            base + "/timeline?direction=after&limit=0&projection=projected",
            base + "/timeline/last-item",
            base + "/timeline/last-assistant-message",
        ):
            reads[path] = get(path)
    for name in ("projects", "workspaces"):
        for record in reads[f"/api/v1/{name}?archived=all&limit=2"]:
            path = f"/api/v1/{name}/{record['id']}"
            reads[path] = get(path)
    reads.update(_claude_code_reads(get))
    return reads


def _claude_code_reads(get: Get) -> dict[str, object]:
    """What a SessionStore reads: the project's sessions and summaries, each session's summary,
    subkeys and entries (``load``), and each subkey's entries."""
    base = "/api/v1/claude-code/"
    project = f"?project_key={quote(CLAUDE_CODE_PROJECT)}"
    reads = {path: get(path) for path in (base + "sessions" + project, base + "summaries" + project)}
    for session_id in CLAUDE_CODE_SESSIONS:
        session = f"{project}&session_id={quote(session_id)}"
        for path in ("session/summary", "session/entries", "session/subkeys"):
            reads[base + path + session] = get(base + path + session)
        status, subkeys = reads[base + "session/subkeys" + session]
        assert status == 200, subkeys
        for subpath in subkeys["subkeys"]:
            path = f"{base}session/entries{session}&subpath={quote(subpath, safe='')}"
            reads[path] = get(path)
    return reads
