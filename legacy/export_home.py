"""Write what chartr holds back out as a legacy home: the layout ``import_legacy_json`` reads.

- ``projects/projects.json`` and ``projects/workspaces.json``: arrays of records
  under Paseo's key names;
- ``agents/<dir>/<agent id>.json``: one record per agent (archived ones too);
- ``timelines/<agent id>.jsonl``: each committed timeline (``legacy.export``).

Each record is its ``extra`` (the keys it came with that chartr does not model,
Paseo's ``projectId`` and ``workspaceId`` among them) overlaid with the keys
chartr models, so a home imported and exported again holds every key it had.
Times are written as Paseo writes them (``toISOString()``: UTC, milliseconds).
Records chartr created itself get the ids ``chartr-project-<pk>`` and
``chartr-workspace-<pk>``. Reads only.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from kernel.files import replaced_atomically
from legacy import records
from legacy.export import write_all_timelines
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot

#: Each kind under Paseo's name for it: the import's mapping (``legacy.records``) read backwards.
PROJECT_KINDS = {kind: name for name, kind in records.PROJECT_KINDS.items()}
WORKSPACE_KINDS = {kind: name for name, kind in records.WORKSPACE_KINDS.items()}


def paseo_time(value: dt.datetime | None) -> str | None:
    """``value`` as JavaScript's ``toISOString()`` writes it."""
    if value is None:
        return None
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _or_none(value: Any) -> Any:
    """Paseo writes null where chartr keeps an empty string or object."""
    return value if value not in ("", {}) else None


def project_record(project: Project) -> dict:
    return {
        **project.extra,
        "projectId": project_id(project),
        "rootPath": project.directory,
        "kind": PROJECT_KINDS[project.kind],
        "displayName": project.display_name,
        **({"gitRemote": project.git_remote} if project.git_remote else {}),
        "createdAt": paseo_time(project.created_at),
        "updatedAt": paseo_time(project.updated_at),
        "archivedAt": paseo_time(project.archived_at),
    }


def project_id(project: Project) -> str:
    return project.extra.get("projectId") or f"chartr-project-{project.pk}"


def workspace_record(workspace: Workspace) -> dict:
    return {
        **workspace.extra,
        "workspaceId": workspace.extra.get("workspaceId") or f"chartr-workspace-{workspace.pk}",
        "projectId": project_id(workspace.project),
        "cwd": workspace.directory,
        "kind": WORKSPACE_KINDS[workspace.kind],
        "displayName": workspace.display_name,
        "branch": _or_none(workspace.branch),
        "worktreeRoot": _or_none(workspace.worktree_root),
        "createdAt": paseo_time(workspace.created_at),
        "updatedAt": paseo_time(workspace.updated_at),
        "archivedAt": paseo_time(workspace.archived_at),
    }


#: The agent fields Paseo writes null for where chartr keeps an empty string or object.
AGENT_NULL_WHEN_EMPTY = frozenset({"title", "last_mode_id", "persistence"})


def agent_record(agent: AgentSnapshot) -> dict:
    """Each field under its key in ``records.AGENT_FIELD_KEYS``; the activity times are its timeline head's."""
    record = dict(agent.extra)
    for name, key in records.AGENT_FIELD_KEYS.items():
        value = getattr(agent.timeline_head if name in records.HEAD_ACTIVITY_FIELDS else agent, name)
        if isinstance(value, dt.datetime):
            value = paseo_time(value)
        record[key] = _or_none(value) if name in AGENT_NULL_WHEN_EMPTY else value
    record["cwd"] = agent.cwd or agent.workspace.directory
    return record


def _write_json(path: Path, value: Any) -> None:
    """Atomically (``kernel.files.replaced_atomically``); a home of many agent files is not synced file by file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path, sync=False) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        json.dump(value, handle, ensure_ascii=False, indent=2)


def write_home(*, out_dir: Path) -> dict[str, int]:
    """Every project, workspace, agent and timeline under ``out_dir``; how many of each."""
    out_dir = Path(out_dir)
    projects = list(Project.objects.order_by("pk"))
    workspaces = list(Workspace.objects.select_related("project").order_by("pk"))
    _write_json(out_dir / "projects" / "projects.json", [project_record(p) for p in projects])
    _write_json(out_dir / "projects" / "workspaces.json", [workspace_record(w) for w in workspaces])
    agents = 0
    for agent in AgentSnapshot.objects.select_related("workspace", "timeline_head").order_by("agent_id").iterator(500):
        record = agent_record(agent)
        _write_json(out_dir / "agents" / record["cwd"].strip("/").replace("/", "-") / f"{agent.agent_id}.json", record)
        agents += 1
    timelines = write_all_timelines(out_dir=out_dir / "timelines")
    return {
        "projects": len(projects),
        "workspaces": len(workspaces),
        "agents": agents,
        "timeline_rows": sum(rows for _, rows in timelines),
    }
