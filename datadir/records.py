"""What a data snapshot holds in the operator's words: its projects, workspaces and agents, whether
each is archived, and each agent's timeline rows; and what restoring it changes against now.

A dump reads them through the cursor that sees exactly what it copied (``DatabaseBackend.dump``) and
writes them into the manifest's ``records``; a restore preview compares those with the live
database's, and the snapshot list compares each snapshot's with the one before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from timeline.models import TimelineHead

#: The kinds, in the order an operator reads them, with their singular and plural names.
KINDS = {"projects": ("project", "projects"), "workspaces": ("workspace", "workspaces"), "agents": ("agent", "agents")}


def _table(model) -> str:
    return model._meta.db_table


def _column(model, name: str) -> str:
    return model._meta.get_field(name).column


def _queries() -> dict[str, str]:
    project, workspace, agent, head = Project, Workspace, AgentSnapshot, TimelineHead
    archived = _column(project, "archived_at")
    return {
        "projects": f"SELECT p.id, p.display_name, p.{archived} IS NOT NULL, NULL FROM {_table(project)} p",
        "workspaces": (
            f"SELECT w.id, w.display_name, w.{_column(workspace, 'archived_at')} IS NOT NULL, p.display_name "
            f"FROM {_table(workspace)} w JOIN {_table(project)} p ON p.id = w.{_column(workspace, 'project')}"
        ),
        "agents": (
            f"SELECT a.agent_id, a.title, a.{_column(agent, 'archived_at')} IS NOT NULL, "
            f"COALESCE(h.{_column(head, 'committed_rows')}, 0) FROM {_table(agent)} a "
            f"LEFT JOIN {_table(head)} h ON h.{_column(head, 'agent')} = a.agent_id"
        ),
    }


def read_records(cursor: Any) -> dict[str, dict[str, list]]:
    """Every project, workspace and agent the DB-API ``cursor`` sees, for a manifest (JSON).

    ``{"projects": {id: [name, archived]}, "workspaces": {id: [name, archived]},
    "agents": {agent_id: [name, archived, timeline rows]}}``; names as the admin writes them
    ("shop (app)" for a workspace, "Fix the build · 3f2a9c1d" for an agent).
    """
    records: dict[str, dict[str, list]] = {}
    for kind, sql in _queries().items():
        cursor.execute(sql)
        rows = cursor.fetchall()
        if kind == "projects":
            records[kind] = {str(key): [name, bool(archived)] for key, name, archived, _ in rows}
        elif kind == "workspaces":
            records[kind] = {str(key): [f"{name} ({project})", bool(archived)] for key, name, archived, project in rows}
        else:
            records[kind] = {
                key: [str(AgentSnapshot(agent_id=key, title=title)), bool(archived), int(count)]
                for key, title, archived, count in rows
            }
    return records


@dataclass(frozen=True)
class RecordChange:
    """One record a restore (or the time between two snapshots) changes, as one sentence."""

    kind: str  # "projects", "workspaces" or "agents"
    key: str
    name: str
    #: "unarchived", "archived", "removed", "added" or "rows" (an agent whose timeline rows differ).
    change: str
    rows_before: int | None = None
    rows_after: int | None = None

    @property
    def noun(self) -> str:
        """ "project", "workspace" or "agent"."""
        return KINDS[self.kind][0]


def record_changes(before: dict[str, dict[str, list]], after: dict[str, dict[str, list]]) -> list[RecordChange]:
    """What turns ``before`` into ``after``, record by record (a restore: before = now, after = the snapshot)."""
    found: list[RecordChange] = []
    for kind in KINDS:
        old, new = before.get(kind, {}), after.get(kind, {})
        for key in sorted(set(old) | set(new), key=lambda key: (new.get(key) or old.get(key))[0].lower()):
            found.extend(_changes_of(kind, key, old.get(key), new.get(key)))
    return found


def _changes_of(kind: str, key: str, old: list | None, new: list | None) -> list[RecordChange]:
    rows = (lambda record: record[2] if record and len(record) > 2 else None) if kind == "agents" else lambda _: None
    if old is None:
        return [RecordChange(kind, key, new[0], "added", None, rows(new))]
    if new is None:
        return [RecordChange(kind, key, old[0], "removed", rows(old), None)]
    changes = []
    if old[1] != new[1]:
        changes.append(RecordChange(kind, key, new[0], "archived" if new[1] else "unarchived"))
    if rows(old) != rows(new):
        changes.append(RecordChange(kind, key, new[0], "rows", rows(old), rows(new)))
    return changes


def _count(number: int, kind: str) -> str:
    singular, plural = KINDS[kind]
    return f"{number:,} {singular if number == 1 else plural}"


def summarize_record_changes(changes: list[RecordChange]) -> list[str]:
    """Short phrases for a listing: "1 agent added", "1 workspace archived", "timeline rows +2,689 (3 agents)"."""
    phrases = []
    for change, words in PAST.items():
        for kind in KINDS:
            number = sum(1 for item in changes if item.kind == kind and item.change == change)
            if number:
                phrases.append(f"{_count(number, kind)} {words}")
    grown = [item for item in changes if item.kind == "agents" and (item.rows_before or 0) != (item.rows_after or 0)]
    if grown:
        delta = sum((item.rows_after or 0) - (item.rows_before or 0) for item in grown)
        phrases.append(f"timeline rows {delta:+,} ({_count(len(grown), 'agents')})")
    return phrases


def holdings(records: dict[str, dict[str, list]]) -> str:
    """ "3 projects, 4 workspaces, 50 agents (2 archived), 12,345 timeline rows"."""
    parts = []
    for kind in KINDS:
        items = records.get(kind, {}).values()
        archived = sum(1 for item in items if item[1])
        parts.append(_count(len(items), kind) + (f" ({archived:,} archived)" if archived else ""))
    rows = sum(item[2] for item in records.get("agents", {}).values())
    return ", ".join(parts) + f", {rows:,} timeline row{'' if rows == 1 else 's'}"


#: What each change means between two snapshots (past) and for a restore (what it will do).
PAST = {"added": "added", "removed": "deleted", "archived": "archived", "unarchived": "unarchived"}


def past_sentence(change: RecordChange) -> str:
    singular = KINDS[change.kind][0]
    if change.change == "rows":
        return f"{singular} {change.name}: timeline rows {change.rows_before or 0:,} -> {change.rows_after or 0:,}"
    rows = f" ({change.rows_after or change.rows_before or 0:,} timeline rows)" if change.kind == "agents" else ""
    return f"{singular} {change.name} {PAST[change.change]}{rows}"
