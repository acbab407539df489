"""Reading and checking a legacy home directory, writing nothing.

Every file and record becomes part of the ``Plan`` or a ``Problem``. Any
problem aborts the import, unless ``skip_invalid`` is set: then the invalid
records (and whatever depends on them) are left out and listed in the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from legacy.histories import HistoryPlan, plan_histories
from legacy.located import parse_array_file
from legacy.paseo import AGENT_TIMELINES, TIMELINES_DB, TIMELINES_DB_COMPANIONS, scan_paseo_stores
from legacy.problems import LegacyImportInvalid, Problem
from legacy.records import (
    LegacyAgent,
    LegacyProject,
    LegacyWorkspace,
    agent_files,
    iter_agent_records,
    newest_by,
    parse_project,
    parse_workspace,
)
from legacy.report import KINDS, ImportReport, Progress
from legacy.timelines import TimelinePlan, scan_timelines

EXPECTED_ENTRIES = (
    "projects/projects.json",
    "projects/workspaces.json",
    "agents/",
    "timelines/",
    f"{AGENT_TIMELINES}/",
    TIMELINES_DB,
)
#: The top-level entries of a home an import reads (and backs up); any other is listed as not read.
READ_ENTRIES = frozenset({"projects", "agents", "timelines", AGENT_TIMELINES, TIMELINES_DB, *TIMELINES_DB_COMPANIONS})

Problems = dict[str, list[Problem]]


@dataclass
class Plan:
    projects: list[LegacyProject]
    workspaces: list[LegacyWorkspace]
    agents: list[LegacyAgent]
    timelines: dict[str, TimelinePlan]
    histories: dict[str, HistoryPlan]


def check_source(source: Path) -> None:
    """Refuse, before anything else, a path that is no legacy home at all."""
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


def scan_home(source: Path, report: ImportReport, *, skip_invalid: bool, progress: Progress) -> Plan:
    """Check every file and record of ``source``; raise ``LegacyImportInvalid``
    on any problem unless ``skip_invalid``. Agents chartr holds that have a
    timeline file are locked from here on (see ``scan_timelines``)."""
    problems: Problems = {kind: [] for kind in KINDS}
    report.unread += [f"{entry}" for entry in sorted(source.iterdir()) if entry.name not in READ_ENTRIES]
    progress("reading records", 0, 1)
    projects, project_dir_by_id, invalid_project_ids = _scan_projects(source, problems, report)
    workspaces = _scan_workspaces(source, project_dir_by_id, invalid_project_ids, problems, report)
    agents_by_id, invalid_agent_ids = _scan_agents(source, problems, report)
    timelines = scan_timelines(
        source / "timelines",
        agent_ids=set(agents_by_id),
        invalid_agent_ids=invalid_agent_ids,
        problems=problems["timeline_rows"],
        report=report,
        progress=progress,
    )
    progress("checking Paseo histories", 0, 1)
    histories = plan_histories(
        scan_paseo_stores(source),
        agent_ids=set(agents_by_id),
        invalid_agent_ids=invalid_agent_ids,
        jsonl_agent_ids=set(timelines),
        problems=problems["timeline_rows"],
        report=report,
    )
    _settle_problems(problems, report, skip_invalid=skip_invalid)
    return Plan(
        projects=projects,
        workspaces=workspaces,
        agents=list(agents_by_id.values()),
        timelines=timelines,
        histories=histories,
    )


def _scan_projects(
    source: Path, problems: Problems, report: ImportReport
) -> tuple[list[LegacyProject], dict[str, str], set[str]]:
    """The projects to import, the directory of each legacy project id, and
    the ids claimed by invalid records.

    A newer record of the same id supersedes an older one, then records
    naming the same directory merge (the newest wins).
    """
    parsed = parse_array_file(source / "projects" / "projects.json", parse_project, "projectId")
    problems["projects"] += parsed.problems
    by_id = newest_by(parsed.records, lambda p: p.legacy_id, report.warnings)
    by_dir = newest_by(list(by_id.values()), lambda p: p.directory, report.warnings)
    return list(by_dir.values()), {p.legacy_id: p.directory for p in by_id.values()}, parsed.invalid_ids


def _scan_workspaces(
    source: Path,
    project_dir_by_id: dict[str, str],
    invalid_project_ids: set[str],
    problems: Problems,
    report: ImportReport,
) -> list[LegacyWorkspace]:
    """The workspaces to import: those whose project is valid, merged as projects are."""
    parsed = parse_array_file(source / "projects" / "workspaces.json", parse_workspace, "workspaceId")
    problems["workspaces"] += parsed.problems
    valid = []
    for workspace in parsed.records:
        project_dir = project_dir_by_id.get(workspace.legacy_project_id)
        if project_dir is None:
            reason = (
                "whose record is invalid"
                if workspace.legacy_project_id in invalid_project_ids
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
        valid.append(workspace)
    by_id = newest_by(valid, lambda w: w.legacy_id, report.warnings)
    by_dir = newest_by(list(by_id.values()), lambda w: w.directory, report.warnings)
    return list(by_dir.values())


def _scan_agents(source: Path, problems: Problems, report: ImportReport) -> tuple[dict[str, LegacyAgent], set[str]]:
    """The agents to import by id (the newest record of each), and the ids of invalid agent files."""
    files, leftovers, others = agent_files(source / "agents")
    report.warnings += [f"{path}: skipped, a leftover of an interrupted write" for path in leftovers]
    report.warnings += [f"{path}: ignored, not an agent file" for path in others]
    valid: list[LegacyAgent] = []
    invalid_ids: set[str] = set()
    for path, agent, found in iter_agent_records(files):
        if found:
            problems["agents"] += found
            invalid_ids.add(path.stem)
        else:
            valid.append(agent)
    return newest_by(valid, lambda a: a.agent_id, report.warnings), invalid_ids


def _settle_problems(problems: Problems, report: ImportReport, *, skip_invalid: bool) -> None:
    """Abort on any problem, or (``skip_invalid``) count and list what is left out."""
    found = [problem for kind in KINDS for problem in problems[kind]]
    if found and not skip_invalid:
        raise LegacyImportInvalid(found)
    for kind in KINDS:
        # Timeline rows were counted as their files were read.
        if kind != "timeline_rows":
            report.counts[kind].skipped += len(problems[kind])
    report.skipped += [str(problem) for problem in found]
