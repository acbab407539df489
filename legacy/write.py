"""Writing the checked projects, workspaces and agents of an import, in batches.

Identity: projects and workspaces are matched by directory, agents by id. A
record that already exists is updated only when the legacy ``updatedAt`` is
newer than chartr's ``updated_at``, so running twice changes nothing. Rows
chartr holds are locked before they are compared, and written back in batches
by their apps' services (``registry.services.import_projects`` and
``import_workspaces``, ``snapshots.services.import_agents``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from legacy.records import (
    HEAD_ACTIVITY_FIELDS,
    PROJECT_FIELDS,
    WORKSPACE_FIELDS,
    LegacyAgent,
    LegacyProject,
    LegacyWorkspace,
)
from legacy.report import ImportReport
from legacy.selectors import chunks, locked_rows
from registry.directories import directories_above, directory_hash, last_segment
from registry.models import Project, Workspace
from registry.services import import_projects, import_workspaces
from snapshots.models import AgentSnapshot
from snapshots.services import UPDATABLE_AGENT_FIELDS, import_agents
from timeline.services import CarriedHead, carry_over_heads

if TYPE_CHECKING:
    from legacy.scan import Plan

AGENT_UPDATE_FIELDS = [
    *UPDATABLE_AGENT_FIELDS,
    "cwd",
    "archived_at",
    "archive_operation",
    "updated_at",
    "version",
    "extra",
]


def write_records(plan: Plan, report: ImportReport) -> None:
    """Projects, then workspaces, then agents: each needs the keys of the one before."""
    project_pk_by_dir = _write_by_directory(Project, "projects", plan.projects, PROJECT_FIELDS, import_projects, report)
    workspace_pk_by_dir = _write_by_directory(
        Workspace, "workspaces", plan.workspaces, WORKSPACE_FIELDS, import_workspaces, report, project_pk_by_dir
    )
    _write_agents(plan, workspace_pk_by_dir, project_pk_by_dir, report)


def _carry_archive(record, archived_at: dt.datetime | None) -> None:
    """Legacy archives carry over; each record archived by the legacy data
    gets its own operation id, so it counts as archived on its own."""
    if archived_at is None:
        record.archived_at = None
        record.archive_operation = None
        return
    if record.archive_operation is None:
        record.archive_operation = uuid.uuid4()
    record.archived_at = archived_at


def _write_by_directory(
    model,
    kind: str,
    records: list[LegacyProject] | list[LegacyWorkspace],
    names: tuple[str, ...],
    save,
    report: ImportReport,
    project_pk_by_dir: dict[str, int] | None = None,
) -> dict[str, int]:
    """Projects or workspaces (given ``project_pk_by_dir``, each workspace's project) matched by directory:
    a new one made, one with a newer ``updated_at`` given the legacy record's ``names``, its ``updated_at``
    and its archive, each written by ``save``; every pk by directory."""
    counts = report.counts[kind]
    existing = {
        row.directory: row
        for row in locked_rows(model, "directory_hash", [directory_hash(legacy.directory) for legacy in records])
    }
    new, changed = [], []
    for legacy in records:
        parent = {} if project_pk_by_dir is None else {"project_id": project_pk_by_dir[legacy.project_directory]}
        row = existing.get(legacy.directory)
        if row is None:
            row = model(directory=legacy.directory, created_at=legacy.created_at, **parent)
            new.append(row)
        else:
            if parent and row.project_id != parent["project_id"]:
                report.warnings.append(
                    f"{legacy.origin}: workspace {legacy.directory} belongs to another project in chartr; it stays there"
                )
            if legacy.updated_at <= row.updated_at:
                counts.unchanged += 1
                continue
            changed.append(row)
        for name in names:
            setattr(row, name, getattr(legacy, name))
        row.updated_at = legacy.updated_at
        _carry_archive(row, legacy.archived_at)
        report.count_extra(kind, legacy.extra)
    save(new=new, changed=changed)
    counts.created += len(new)
    counts.updated += len(changed)
    return {row.directory: row.pk for row in [*existing.values(), *new]}


def _workspaces_for_new_agents(
    agents: list[LegacyAgent],
    workspace_pk_by_dir: dict[str, int],
    project_pk_by_dir: dict[str, int],
    report: ImportReport,
) -> dict[str, int]:
    """Every cwd of a new agent mapped to a workspace. A cwd no workspace has
    gets a ``directory`` project (reusing one already at that directory) and a
    ``checkout`` workspace: the one place a directory becomes identity."""
    workspace_pk_by_dir = dict(workspace_pk_by_dir)
    cwds = {agent.cwd for agent in agents}
    for chunk in chunks(sorted(cwds - set(workspace_pk_by_dir))):
        workspace_pk_by_dir.update(Workspace.objects.at_directories(chunk).values_list("directory", "pk"))
    _add_containing_workspaces(sorted(cwds - set(workspace_pk_by_dir)), workspace_pk_by_dir)
    missing = sorted(cwds - set(workspace_pk_by_dir))
    if not missing:
        return workspace_pk_by_dir
    first_seen: dict[str, dt.datetime] = {}
    for agent in agents:
        if agent.cwd in missing:
            first_seen[agent.cwd] = min(first_seen.get(agent.cwd, agent.created_at), agent.created_at)

    def made_at(directory: str) -> dict:
        """A new project's or workspace's fields: named after its directory, made when its first agent was."""
        when = first_seen[directory]
        return {"directory": directory, "display_name": last_segment(directory), "created_at": when, "updated_at": when}

    project_pk_by_dir = dict(project_pk_by_dir)
    for chunk in chunks([d for d in missing if d not in project_pk_by_dir]):
        project_pk_by_dir.update(Project.objects.at_directories(chunk).values_list("directory", "pk"))
    new_projects = [
        Project(kind=Project.Kind.DIRECTORY, **made_at(directory))
        for directory in missing
        if directory not in project_pk_by_dir
    ]
    import_projects(new=new_projects)
    project_pk_by_dir.update((project.directory, project.pk) for project in new_projects)
    new_workspaces = [
        Workspace(project_id=project_pk_by_dir[directory], kind=Workspace.Kind.CHECKOUT, **made_at(directory))
        for directory in missing
    ]
    import_workspaces(new=new_workspaces)
    workspace_pk_by_dir.update((workspace.directory, workspace.pk) for workspace in new_workspaces)
    report.counts["projects"].created += len(new_projects)
    report.counts["workspaces"].created += len(new_workspaces)
    return workspace_pk_by_dir


def _add_containing_workspaces(cwds: list[str], workspace_pk_by_dir: dict[str, int]) -> None:
    """Map each cwd below a workspace's directory to the deepest such workspace: an
    agent working in a subfolder belongs to its workspace and keeps its own ``cwd``."""
    wanted = sorted({ancestor for cwd in cwds for ancestor in directories_above(cwd)} - set(workspace_pk_by_dir))
    known = dict(workspace_pk_by_dir)
    for chunk in chunks(wanted):
        known.update(Workspace.objects.at_directories(chunk).values_list("directory", "pk"))
    for cwd in cwds:
        container = next((ancestor for ancestor in directories_above(cwd) if ancestor in known), None)
        if container is not None:
            workspace_pk_by_dir[cwd] = known[container]


def _write_agents(
    plan: Plan, workspace_pk_by_dir: dict[str, int], project_pk_by_dir: dict[str, int], report: ImportReport
) -> None:
    counts = report.counts["agents"]
    existing = {
        agent.agent_id: agent for agent in locked_rows(AgentSnapshot, "agent_id", [a.agent_id for a in plan.agents])
    }
    new_agents = [legacy for legacy in plan.agents if legacy.agent_id not in existing]
    workspace_pk_by_dir = _workspaces_for_new_agents(new_agents, workspace_pk_by_dir, project_pk_by_dir, report)
    # A subfolder cwd maps to its workspace too; the workspace's own directory is the shortest.
    by_length = sorted(workspace_pk_by_dir.items(), key=lambda item: len(item[0]), reverse=True)
    workspace_dir_by_pk = {pk: directory for directory, pk in by_length}
    other_workspaces = sorted({agent.workspace_id for agent in existing.values()} - set(workspace_dir_by_pk))
    for chunk in chunks(other_workspaces):
        workspace_dir_by_pk.update(Workspace.objects.filter(pk__in=chunk).values_list("pk", "directory"))
    new, changed, heads = [], [], []
    for legacy in plan.agents:
        agent = existing.get(legacy.agent_id)
        fields = dict(legacy.fields)
        activity = {name: fields.pop(name, None) for name in HEAD_ACTIVITY_FIELDS}
        if agent is None:
            timeline = plan.timelines.get(legacy.agent_id)
            agent = AgentSnapshot(
                agent_id=legacy.agent_id,
                workspace_id=workspace_pk_by_dir[legacy.cwd],
                created_at=legacy.created_at,
                updated_at=legacy.updated_at,
                **fields,
            )
            # head_seq stays 0: appending the file's rows moves it (legacy.timelines).
            heads.append(CarriedHead(agent.agent_id, epoch=timeline.epoch if timeline else None, **activity))
            _carry_archive(agent, legacy.archived_at)
            new.append(agent)
            report.count_extra("agents", legacy.extra)
        elif legacy.updated_at > agent.updated_at:
            for name, value in fields.items():
                setattr(agent, name, value)
            heads.append(CarriedHead(agent.agent_id, **activity))
            agent.updated_at = legacy.updated_at
            agent.version += 1
            _carry_archive(agent, legacy.archived_at)
            changed.append(agent)
            report.count_extra("agents", legacy.extra)
            current_dir = workspace_dir_by_pk.get(agent.workspace_id)
            if (
                current_dir is not None
                and current_dir != legacy.cwd
                and current_dir not in directories_above(legacy.cwd)
            ):
                report.warnings.append(
                    f"{legacy.origin}: agent {legacy.agent_id} has cwd {legacy.cwd} but is in workspace "
                    f"{current_dir} in chartr; it stays there"
                )
        else:
            counts.unchanged += 1
    _archive_with_workspaces([*new, *changed], {a.agent_id: a for a in plan.agents}, report)
    import_agents(new=new, changed=changed, fields=AGENT_UPDATE_FIELDS)
    carry_over_heads(heads)
    counts.created += len(new)
    counts.updated += len(changed)


def _archive_with_workspaces(agents: list[AgentSnapshot], legacy_by_id: dict[str, LegacyAgent], report) -> None:
    """A live agent inside an archived workspace is a state the API refuses to create:
    the import archives it with its workspace (the workspace's archive operation, so
    unarchiving the workspace restores it too), closed as every archived agent is."""
    live = [agent for agent in agents if agent.archived_at is None]
    archived = {}
    for chunk in chunks(sorted({agent.workspace_id for agent in live})):
        archived.update(
            (pk, (at, operation))
            for pk, at, operation in Workspace.objects.filter(pk__in=chunk, archived_at__isnull=False).values_list(
                "pk", "archived_at", "archive_operation"
            )
        )
    for agent in live:
        if agent.workspace_id not in archived:
            continue
        agent.archived_at, agent.archive_operation = archived[agent.workspace_id]
        agent.lifecycle = AgentSnapshot.Lifecycle.CLOSED
        report.archived_with_workspace.append(agent.agent_id)
        report.warnings.append(
            f"{legacy_by_id[agent.agent_id].origin}: agent {agent.agent_id} is live but its workspace is archived; "
            "archived with it"
        )
