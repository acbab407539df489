"""Every API read of an instance, for comparing two instances: the lists (every page, archived
or not), each agent and each timeline (every row, the projected view, the last item and message).

``get(path)`` answers ``(status, json)``; no Django import, so the process test uses it too."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

Get = Callable[[str], tuple[int, object]]
LISTS = ("projects", "workspaces", "agents")


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
    return reads
