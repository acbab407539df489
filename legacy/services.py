"""``import_legacy``: the one write path that brings a legacy home directory into chartr.

The whole run is one transaction:

1. **Validate** every file and record (reading the database, writing nothing).
   Any problem aborts the run, unless ``skip_invalid`` is set, in which case
   the invalid records (and whatever depends on them) are left out and listed.
2. **Back up** the input files to ``<data dir>/backup/pre-migration/<timestamp>/``
   (not in a dry run, which leaves nothing behind at all).
3. **Write** projects, workspaces, agents and timeline rows with batched bulk
   operations, then the ``ImportRun`` record. A dry run rolls it all back.

Identity: projects and workspaces are matched by directory, agents by id.
A record that already exists is updated only when the legacy ``updatedAt``
is newer than chartr's ``updated_at``, so running twice changes nothing.

Timelines: rows are appended after the agent's ``head_seq``, keeping seq
contiguous. An agent the import creates takes the file header's epoch, so an
export imported into an empty database reproduces the timeline exactly. An
existing agent keeps its epoch (appending is not replacing); the file must
continue the agent's history, which is checked on the last row both share.
"""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from chartr.paths import ensure_private_dir
from kernel.errors import Conflict
from legacy import jsonl
from legacy.models import ImportRun
from legacy.problems import LegacyImportInvalid, Problem, RecordError
from legacy.records import (
    LegacyAgent,
    LegacyProject,
    LegacyWorkspace,
    agent_files,
    iter_agent_records,
    newest_by,
    parse_array_file,
    parse_project,
    parse_workspace,
)
from registry.directories import last_segment
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot, new_timeline_epoch
from snapshots.services import UPDATABLE_AGENT_FIELDS, notify_agents_changed
from timeline.models import TimelineRow
from timeline.signals import timeline_committed

KINDS = ("projects", "workspaces", "agents", "timeline_rows")
EXPECTED_ENTRIES = ("projects/projects.json", "projects/workspaces.json", "agents/", "timelines/")
#: Timeline rows per INSERT batch: big enough to amortise the round trip,
#: small enough that memory stays flat at any file size.
ROW_BATCH = 5000
#: Records per bulk UPDATE / IN (...) lookup; well under SQLite's variable limit.
RECORD_BATCH = 500
#: Problems listed per timeline file before the rest are summed up.
MAX_PROBLEMS_PER_FILE = 20

Progress = Callable[[str, int, int], None]

AGENT_UPDATE_FIELDS = [
    *UPDATABLE_AGENT_FIELDS,
    "archived_at",
    "archive_operation",
    "updated_at",
    "version",
]


@dataclass
class KindCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "unchanged": self.unchanged, "skipped": self.skipped}


@dataclass
class ImportReport:
    source: str
    dry_run: bool
    counts: dict[str, KindCounts] = field(default_factory=lambda: {kind: KindCounts() for kind in KINDS})
    #: every invalid file or record left out (only with ``skip_invalid``)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    backup_path: str = ""
    import_run_id: int | None = None

    def total(self, column: str) -> int:
        return sum(getattr(counts, column) for counts in self.counts.values())

    def counts_dict(self) -> dict[str, dict[str, int]]:
        return {kind: counts.as_dict() for kind, counts in self.counts.items()}

    @property
    def changed_anything(self) -> bool:
        return bool(self.total("created") or self.total("updated"))


@dataclass
class TimelinePlan:
    path: Path
    agent_id: str
    #: the agent's epoch once imported: the header's for an agent the import creates
    epoch: str
    #: complete rows in the file (seq 1..last_seq)
    last_seq: int
    #: rows chartr already holds for this agent; rows after it are appended
    start_seq: int
    agent_exists: bool

    @property
    def to_append(self) -> int:
        return max(0, self.last_seq - self.start_seq)


@dataclass
class Plan:
    projects: list[LegacyProject]
    workspaces: list[LegacyWorkspace]
    agents: list[LegacyAgent]
    timelines: dict[str, TimelinePlan]


def import_legacy(
    *,
    source: Path | str,
    skip_invalid: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the legacy directory ``source``; raise ``LegacyImportInvalid`` (nothing written) on bad input."""
    source = Path(source)
    _check_source(source)
    started_at = timezone.now()
    report = ImportReport(source=str(source), dry_run=dry_run)
    progress = progress or (lambda phase, done, total: None)
    backup: Path | None = None
    try:
        with transaction.atomic():
            plan = _validate(source, report, skip_invalid=skip_invalid, progress=progress)
            if not dry_run:
                backup = _backup(source, started_at)
                report.backup_path = str(backup)
            try:
                _write(plan, report, progress=progress)
            except IntegrityError as exc:
                raise Conflict(f"The database refused the import ({exc}); nothing was imported.") from exc
            run = _record_run(report, started_at=started_at)
            if dry_run:
                transaction.set_rollback(True)
            else:
                report.import_run_id = run.pk
    except BaseException:
        # Nothing was imported, so the copy protects nothing.
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
        raise
    return report


def _check_source(source: Path) -> None:
    if not source.is_dir():
        raise LegacyImportInvalid(
            [Problem(str(source), "", "not a directory")],
            message=f"{source} is not a directory; nothing was imported.",
            skippable=False,
        )
    present = [
        entry
        for entry in EXPECTED_ENTRIES
        if ((source / entry).is_dir() if entry.endswith("/") else (source / entry).is_file())
    ]
    if not present:
        raise LegacyImportInvalid(
            [Problem(str(source), "", f"holds none of the legacy data: expected {', '.join(EXPECTED_ENTRIES)}")],
            message=f"{source} is not a legacy home directory; nothing was imported.",
            skippable=False,
        )


# --- 1. validation --------------------------------------------------------


def _validate(source: Path, report: ImportReport, *, skip_invalid: bool, progress: Progress) -> Plan:
    problems: dict[str, list[Problem]] = {kind: [] for kind in KINDS}

    # Projects: a newer record of the same id supersedes an older one, then
    # records naming the same directory merge (the newest wins).
    parsed_projects = parse_array_file(source / "projects" / "projects.json", parse_project, "projectId")
    problems["projects"] += parsed_projects.problems
    projects_by_id, notes = newest_by(parsed_projects.records, key=lambda p: p.legacy_id)
    report.warnings += notes
    projects_by_dir, notes = newest_by(list(projects_by_id.values()), key=lambda p: p.directory)
    report.warnings += notes
    project_dir_by_id = {p.legacy_id: p.directory for p in projects_by_id.values()}

    parsed_workspaces = parse_array_file(source / "projects" / "workspaces.json", parse_workspace, "workspaceId")
    problems["workspaces"] += parsed_workspaces.problems
    valid_workspaces = []
    for workspace in parsed_workspaces.records:
        project_dir = project_dir_by_id.get(workspace.legacy_project_id)
        if project_dir is None:
            reason = (
                "whose record is invalid"
                if workspace.legacy_project_id in parsed_projects.invalid_ids
                else "which is not in projects/projects.json"
            )
            problems["workspaces"].append(
                Problem(
                    workspace.source_file,
                    workspace.location,
                    f"names project {workspace.legacy_project_id!r}, {reason}",
                )
            )
            continue
        workspace.project_directory = project_dir
        valid_workspaces.append(workspace)
    workspaces_by_id, notes = newest_by(valid_workspaces, key=lambda w: w.legacy_id)
    report.warnings += notes
    workspaces_by_dir, notes = newest_by(list(workspaces_by_id.values()), key=lambda w: w.directory)
    report.warnings += notes

    files, leftovers, others = agent_files(source / "agents")
    report.warnings += [f"{path}: skipped, a leftover of an interrupted write" for path in leftovers]
    report.warnings += [f"{path}: ignored, not an agent file" for path in others]
    valid_agents: list[LegacyAgent] = []
    invalid_agent_ids: set[str] = set()
    for path, agent, problem in iter_agent_records(files):
        if problem is not None:
            problems["agents"].append(problem)
            invalid_agent_ids.add(path.stem)
        else:
            valid_agents.append(agent)
    agents_by_id, notes = newest_by(valid_agents, key=lambda a: a.agent_id)
    report.warnings += notes

    timelines = _validate_timelines(
        source / "timelines",
        agent_ids=set(agents_by_id),
        invalid_agent_ids=invalid_agent_ids,
        problems=problems,
        report=report,
        progress=progress,
    )

    found = [problem for kind in KINDS for problem in problems[kind]]
    if found and not skip_invalid:
        raise LegacyImportInvalid(found)
    for kind in KINDS:
        if kind != "timeline_rows":
            report.counts[kind].skipped += len(problems[kind])
    report.skipped += [str(problem) for problem in found]
    return Plan(
        projects=list(projects_by_dir.values()),
        workspaces=list(workspaces_by_dir.values()),
        agents=list(agents_by_id.values()),
        timelines=timelines,
    )


def _chunks(items: list, size: int = RECORD_BATCH) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _locked(model: type[models.Model], key: str, values: Iterable) -> list:
    """Rows whose ``key`` is in ``values``, locked until the import commits
    (PostgreSQL; on SQLite the IMMEDIATE transaction already holds the write lock)."""
    values = sorted(set(values))
    rows = []
    for chunk in _chunks(values):
        rows += list(model.objects.select_for_update().filter(**{f"{key}__in": chunk}))
    return rows


def _validate_timelines(
    directory: Path,
    *,
    agent_ids: set[str],
    invalid_agent_ids: set[str],
    problems: dict[str, list[Problem]],
    report: ImportReport,
    progress: Progress,
) -> dict[str, TimelinePlan]:
    if not directory.is_dir():
        return {}
    paths = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix == ".jsonl":
            paths.append(path)
        else:
            report.warnings.append(f"{path}: ignored, not a .jsonl timeline file")
    existing = {agent.agent_id: agent for agent in _locked(AgentSnapshot, "agent_id", [path.stem for path in paths])}
    plans: dict[str, TimelinePlan] = {}
    for index, path in enumerate(paths):
        progress("checking timelines", index, len(paths))
        agent_id = path.stem
        agent = existing.get(agent_id)
        if agent is None and agent_id not in agent_ids:
            reason = (
                f"agent {agent_id!r} has an invalid record in agents/"
                if agent_id in invalid_agent_ids
                else f"no agent {agent_id!r} in agents/ or in chartr"
            )
            problems["timeline_rows"].append(Problem(str(path), "", reason))
            report.counts["timeline_rows"].skipped += _count_lines(path)
            continue
        plan, file_problems, skipped_rows = _scan_timeline(path, agent, report)
        if file_problems:
            problems["timeline_rows"] += file_problems
            report.counts["timeline_rows"].skipped += skipped_rows
        elif plan is not None:
            plans[agent_id] = plan
    progress("checking timelines", len(paths), len(paths))
    return plans


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return max(0, sum(1 for line in handle if line.strip()) - 1)


def _scan_timeline(
    path: Path, agent: AgentSnapshot | None, report: ImportReport
) -> tuple[TimelinePlan | None, list[Problem], int]:
    """Check the whole file, streamed. Returns (plan, problems, row lines)."""
    problems: list[Problem] = []
    header: jsonl.Header | None = None
    head = agent.head_seq if agent is not None else 0
    item_ids: dict[str, int] = {}
    last_seq = 0
    row_lines = 0
    shared_row: tuple[int, jsonl.Row] | None = None
    file = str(path)

    def problem(location: str, reason: str) -> None:
        problems.append(Problem(file, location, reason))

    for line in jsonl.read_lines(path):
        if line.error is not None and line.truncated:
            report.warnings.append(
                f"{file}:line {line.lineno}: the last line is truncated (a write cut short); "
                f"its {last_seq} complete row(s) are kept"
            )
            break
        if header is None:
            if line.error is not None:
                problem(f"line {line.lineno}", line.error)
                break
            try:
                header = jsonl.parse_header(line.value)
            except RecordError as exc:
                problem(f"line {line.lineno}", str(exc))
                break
            if header.agent_id != path.stem:
                problem(f"line {line.lineno}", f"header agent_id {header.agent_id!r} does not match the file name")
                break
            continue
        row_lines += 1
        expected = last_seq + 1
        if line.error is not None:
            problem(f"line {line.lineno}", line.error)
            last_seq = expected
            continue
        try:
            row = jsonl.parse_row(line.value, expected_seq=expected)
        except RecordError as exc:
            problem(f"line {line.lineno}", str(exc))
            last_seq = expected
            continue
        if row.item_id is not None:
            first = item_ids.setdefault(row.item_id, line.lineno)
            if first != line.lineno:
                problem(f"line {line.lineno}", f"item_id {row.item_id!r} repeats line {first}")
        last_seq = row.seq
        # The last row both chartr and the file hold: seq == head, or the
        # file's last row when the file is shorter.
        if row.seq <= head:
            shared_row = (line.lineno, row)
    if header is None and not problems:
        report.warnings.append(f"{file}: empty or only a truncated header; ignored")
        return None, [], 0
    if problems:
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            more = len(problems) - MAX_PROBLEMS_PER_FILE
            problems = problems[:MAX_PROBLEMS_PER_FILE] + [Problem(file, "", f"... and {more} more problem(s)")]
        return None, problems, row_lines
    if agent is not None and shared_row is not None:
        lineno, row = shared_row
        stored = (
            TimelineRow.objects.filter(agent_id=agent.agent_id, seq=row.seq)
            .values("committed_at", "item_id", "item")
            .first()
        )
        if stored is None or (stored["committed_at"], stored["item_id"], stored["item"]) != (
            row.committed_at,
            row.item_id,
            row.item,
        ):
            return (
                None,
                [
                    Problem(
                        file,
                        f"line {lineno}",
                        f"row seq {row.seq} differs from the one chartr holds for agent {agent.agent_id!r}: "
                        f"this file does not continue the agent's history in chartr "
                        f"(file epoch {header.epoch!r}, chartr epoch {agent.timeline_epoch!r})",
                    )
                ],
                row_lines,
            )
    return (
        TimelinePlan(
            path=path,
            agent_id=path.stem,
            # An existing agent keeps its epoch (appending is not replacing).
            epoch=header.epoch if agent is None else agent.timeline_epoch,
            last_seq=last_seq,
            start_seq=head,
            agent_exists=agent is not None,
        ),
        [],
        row_lines,
    )


# --- 2. backup ------------------------------------------------------------


def _backup(source: Path, started_at: dt.datetime) -> Path:
    root = ensure_private_dir(Path(settings.DATA_DIR) / "backup" / "pre-migration")
    target = root / started_at.strftime("%Y%m%dT%H%M%S.%fZ")
    target.mkdir(mode=0o700)
    for name in ("projects", "agents", "timelines"):
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name, symlinks=True)
    return target


# --- 3. writing -----------------------------------------------------------


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


def _create_keeping_times(model: type[models.Model], records: list) -> None:
    """bulk_create stamps auto_now/auto_now_add fields with the current time;
    the legacy times are put back with one bulk UPDATE per batch."""
    if not records:
        return
    times = [(record.created_at, record.updated_at) for record in records]
    model.objects.bulk_create(records, batch_size=RECORD_BATCH)
    for record, (created_at, updated_at) in zip(records, times):
        record.created_at, record.updated_at = created_at, updated_at
    model.objects.bulk_update(records, ["created_at", "updated_at"], batch_size=RECORD_BATCH)


def _write(plan: Plan, report: ImportReport, *, progress: Progress) -> None:
    project_pk_by_dir = _write_projects(plan.projects, report)
    workspace_pk_by_dir = _write_workspaces(plan.workspaces, project_pk_by_dir, report)
    _write_agents(plan, workspace_pk_by_dir, project_pk_by_dir, report)
    _write_timelines(plan, report, progress=progress)


def _write_projects(projects: list[LegacyProject], report: ImportReport) -> dict[str, int]:
    counts = report.counts["projects"]
    existing = {
        project.directory: project for project in _locked(Project, "directory", [p.directory for p in projects])
    }
    new, changed = [], []
    for legacy in projects:
        project = existing.get(legacy.directory)
        if project is None:
            project = Project(
                directory=legacy.directory,
                kind=legacy.kind,
                display_name=legacy.display_name,
                created_at=legacy.created_at,
                updated_at=legacy.updated_at,
            )
            _carry_archive(project, legacy.archived_at)
            new.append(project)
        elif legacy.updated_at > project.updated_at:
            project.kind = legacy.kind
            project.display_name = legacy.display_name
            project.updated_at = legacy.updated_at
            _carry_archive(project, legacy.archived_at)
            changed.append(project)
        else:
            counts.unchanged += 1
    _create_keeping_times(Project, new)
    Project.objects.bulk_update(
        changed, ["kind", "display_name", "updated_at", "archived_at", "archive_operation"], batch_size=RECORD_BATCH
    )
    counts.created += len(new)
    counts.updated += len(changed)
    return {project.directory: project.pk for project in [*existing.values(), *new]}


def _write_workspaces(
    workspaces: list[LegacyWorkspace], project_pk_by_dir: dict[str, int], report: ImportReport
) -> dict[str, int]:
    counts = report.counts["workspaces"]
    existing = {
        workspace.directory: workspace
        for workspace in _locked(Workspace, "directory", [w.directory for w in workspaces])
    }
    new, changed = [], []
    for legacy in workspaces:
        project_pk = project_pk_by_dir[legacy.project_directory]
        workspace = existing.get(legacy.directory)
        if workspace is None:
            workspace = Workspace(
                project_id=project_pk,
                directory=legacy.directory,
                kind=legacy.kind,
                display_name=legacy.display_name,
                branch=legacy.branch,
                created_at=legacy.created_at,
                updated_at=legacy.updated_at,
            )
            _carry_archive(workspace, legacy.archived_at)
            new.append(workspace)
            continue
        if workspace.project_id != project_pk:
            report.warnings.append(
                f"{legacy.origin}: workspace {legacy.directory} belongs to another project in chartr; it stays there"
            )
        if legacy.updated_at > workspace.updated_at:
            workspace.kind = legacy.kind
            workspace.display_name = legacy.display_name
            workspace.branch = legacy.branch
            workspace.updated_at = legacy.updated_at
            _carry_archive(workspace, legacy.archived_at)
            changed.append(workspace)
        else:
            counts.unchanged += 1
    _create_keeping_times(Workspace, new)
    Workspace.objects.bulk_update(
        changed,
        ["kind", "display_name", "branch", "updated_at", "archived_at", "archive_operation"],
        batch_size=RECORD_BATCH,
    )
    counts.created += len(new)
    counts.updated += len(changed)
    return {workspace.directory: workspace.pk for workspace in [*existing.values(), *new]}


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
    unknown = sorted({agent.cwd for agent in agents} - set(workspace_pk_by_dir))
    for chunk in _chunks(unknown):
        workspace_pk_by_dir.update(Workspace.objects.filter(directory__in=chunk).values_list("directory", "pk"))
    missing = sorted({agent.cwd for agent in agents} - set(workspace_pk_by_dir))
    if not missing:
        return workspace_pk_by_dir
    first_seen: dict[str, dt.datetime] = {}
    for agent in agents:
        if agent.cwd in missing:
            first_seen[agent.cwd] = min(first_seen.get(agent.cwd, agent.created_at), agent.created_at)
    project_pk_by_dir = dict(project_pk_by_dir)
    for chunk in _chunks([d for d in missing if d not in project_pk_by_dir]):
        project_pk_by_dir.update(Project.objects.filter(directory__in=chunk).values_list("directory", "pk"))
    new_projects = [
        Project(
            directory=directory,
            kind=Project.Kind.DIRECTORY,
            display_name=last_segment(directory),
            created_at=first_seen[directory],
            updated_at=first_seen[directory],
        )
        for directory in missing
        if directory not in project_pk_by_dir
    ]
    _create_keeping_times(Project, new_projects)
    project_pk_by_dir.update((project.directory, project.pk) for project in new_projects)
    new_workspaces = [
        Workspace(
            project_id=project_pk_by_dir[directory],
            directory=directory,
            kind=Workspace.Kind.CHECKOUT,
            display_name=last_segment(directory),
            created_at=first_seen[directory],
            updated_at=first_seen[directory],
        )
        for directory in missing
    ]
    _create_keeping_times(Workspace, new_workspaces)
    workspace_pk_by_dir.update((workspace.directory, workspace.pk) for workspace in new_workspaces)
    report.counts["projects"].created += len(new_projects)
    report.counts["workspaces"].created += len(new_workspaces)
    return workspace_pk_by_dir


def _write_agents(
    plan: Plan, workspace_pk_by_dir: dict[str, int], project_pk_by_dir: dict[str, int], report: ImportReport
) -> None:
    counts = report.counts["agents"]
    existing = {
        agent.agent_id: agent for agent in _locked(AgentSnapshot, "agent_id", [a.agent_id for a in plan.agents])
    }
    new_agents = [legacy for legacy in plan.agents if legacy.agent_id not in existing]
    workspace_pk_by_dir = _workspaces_for_new_agents(new_agents, workspace_pk_by_dir, project_pk_by_dir, report)
    workspace_dir_by_pk = {pk: directory for directory, pk in workspace_pk_by_dir.items()}
    other_workspaces = sorted({agent.workspace_id for agent in existing.values()} - set(workspace_dir_by_pk))
    for chunk in _chunks(other_workspaces):
        workspace_dir_by_pk.update(Workspace.objects.filter(pk__in=chunk).values_list("pk", "directory"))
    new, changed = [], []
    for legacy in plan.agents:
        agent = existing.get(legacy.agent_id)
        if agent is None:
            timeline = plan.timelines.get(legacy.agent_id)
            agent = AgentSnapshot(
                agent_id=legacy.agent_id,
                workspace_id=workspace_pk_by_dir[legacy.cwd],
                created_at=legacy.created_at,
                updated_at=legacy.updated_at,
                head_seq=timeline.last_seq if timeline else 0,
                timeline_epoch=timeline.epoch if timeline else new_timeline_epoch(),
                **legacy.fields,
            )
            _carry_archive(agent, legacy.archived_at)
            new.append(agent)
        elif legacy.updated_at > agent.updated_at:
            for name, value in legacy.fields.items():
                setattr(agent, name, value)
            agent.updated_at = legacy.updated_at
            agent.version += 1
            _carry_archive(agent, legacy.archived_at)
            changed.append(agent)
            current_dir = workspace_dir_by_pk.get(agent.workspace_id)
            if current_dir is not None and current_dir != legacy.cwd:
                report.warnings.append(
                    f"{legacy.origin}: agent {legacy.agent_id} has cwd {legacy.cwd} but is in workspace "
                    f"{current_dir} in chartr; it stays there"
                )
        else:
            counts.unchanged += 1
    _create_keeping_times(AgentSnapshot, new)
    AgentSnapshot.objects.bulk_update(changed, AGENT_UPDATE_FIELDS, batch_size=RECORD_BATCH)
    counts.created += len(new)
    counts.updated += len(changed)
    notify_agents_changed([agent.agent_id for agent in new], "created")
    notify_agents_changed([agent.agent_id for agent in changed], "updated")


def _write_timelines(plan: Plan, report: ImportReport, *, progress: Progress) -> None:
    counts = report.counts["timeline_rows"]
    total = sum(timeline.to_append for timeline in plan.timelines.values())
    done = 0
    new_heads: list[AgentSnapshot] = []
    for timeline in plan.timelines.values():
        counts.unchanged += min(timeline.last_seq, timeline.start_seq)
        if not timeline.to_append:
            continue
        batch: list[jsonl.Row] = []
        for row in _rows_to_append(timeline):
            batch.append(row)
            if len(batch) >= ROW_BATCH:
                insert_timeline_rows(agent_id=timeline.agent_id, rows=batch)
                done += len(batch)
                batch = []
                progress("importing timeline rows", done, total)
        if batch:
            insert_timeline_rows(agent_id=timeline.agent_id, rows=batch)
            done += len(batch)
            progress("importing timeline rows", done, total)
        counts.created += timeline.to_append
        _announce_rows(timeline)
        if timeline.agent_exists:
            # A new agent was created with its head already set.
            new_heads.append(AgentSnapshot(agent_id=timeline.agent_id, head_seq=timeline.last_seq))
    AgentSnapshot.objects.bulk_update(new_heads, ["head_seq"], batch_size=RECORD_BATCH)


def _announce_rows(timeline: TimelinePlan) -> None:
    """Tell live subscribers, once committed, as the append service does."""
    agent_id, head, epoch = timeline.agent_id, timeline.last_seq, timeline.epoch
    transaction.on_commit(
        lambda: timeline_committed.send(sender=TimelineRow, agent_id=agent_id, head_seq=head, epoch=epoch)
    )


_ROW_COLUMNS = ("agent", "seq", "committed_at", "item_type", "item", "item_id")


def insert_timeline_rows(*, agent_id: str, rows: list[jsonl.Row]) -> None:
    """Insert checked rows with one ``executemany``.

    ``bulk_create`` compiles multi-row INSERTs field by field (on SQLite at
    most 166 rows of 6 parameters each, so 6,000 statements for 1M rows); one
    prepared INSERT run by ``executemany`` made the whole import about 25%
    faster (docs/benchmarks.md). Values are adapted by the same field and
    backend methods the ORM uses, so the stored values are the same.
    Callers hold the invariants: contiguous seq after the head, head updated.
    """
    ops = connection.ops
    meta = TimelineRow._meta
    item_field = meta.get_field("item")
    columns = ", ".join(ops.quote_name(meta.get_field(name).column) for name in _ROW_COLUMNS)
    sql = f"INSERT INTO {ops.quote_name(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(_ROW_COLUMNS))})"
    params = [
        (
            agent_id,
            row.seq,
            ops.adapt_datetimefield_value(row.committed_at),
            row.item_type,
            item_field.get_db_prep_save(row.item, connection),
            row.item_id,
        )
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _rows_to_append(timeline: TimelinePlan):
    """Rows start_seq+1..last_seq, re-read from the file. They were checked
    moments ago; a file that changed in between aborts the import."""
    expected = 1
    lines = jsonl.read_lines(timeline.path)
    next(lines, None)  # the header, checked already
    for line in lines:
        if expected > timeline.last_seq:
            return
        if line.error is not None:
            raise _changed(timeline.path, line.lineno, line.error)
        try:
            row = jsonl.parse_row(line.value, expected_seq=expected)
        except RecordError as exc:
            raise _changed(timeline.path, line.lineno, str(exc)) from None
        expected += 1
        if row.seq > timeline.start_seq:
            yield row
    if expected <= timeline.last_seq:
        raise _changed(timeline.path, 0, f"ends before seq {timeline.last_seq}")


def _changed(path: Path, lineno: int, reason: str) -> LegacyImportInvalid:
    problem = Problem(str(path), f"line {lineno}" if lineno else "", f"changed during the import: {reason}")
    return LegacyImportInvalid(
        [problem], message=f"{path} changed during the import; nothing was imported.", skippable=False
    )


def _record_run(report: ImportReport, *, started_at: dt.datetime) -> ImportRun:
    return ImportRun.objects.create(
        source_path=str(Path(report.source).resolve()),
        backup_path=report.backup_path,
        started_at=started_at,
        finished_at=timezone.now(),
        counts=report.counts_dict(),
        skipped=report.skipped,
        warnings=report.warnings,
    )
