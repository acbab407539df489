"""registry.cascade: one direction of dependency, registry <- snapshots <- timeline."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from registry import cascade, selectors, services
from snapshots.cascade import AgentsUnderWorkspaces
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory

ROOT = Path(__file__).resolve().parents[2]
APPS = {"chartr", "dashboard", "datadir", "kernel", "legacy", "registry", "snapshots", "timeline", "tokens"}


def imported_apps(*paths: str) -> dict[str, set[str]]:
    """For each module under ``paths``, the project apps it imports, lazily or not."""
    found = {}
    for path in paths:
        files = [ROOT / path] if path.endswith(".py") else sorted((ROOT / path).rglob("*.py"))
        for file in files:
            names = set()
            for node in ast.walk(ast.parse(file.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names.add(node.module.split(".")[0])
                elif isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
            found[str(file.relative_to(ROOT))] = names & APPS
    return found


def test_registry_imports_neither_snapshots_nor_timeline():
    offenders = {f: apps for f, apps in imported_apps("registry").items() if apps & {"snapshots", "timeline"}}
    assert offenders == {}


def test_snapshots_does_not_import_timeline():
    offenders = {f: apps for f, apps in imported_apps("snapshots").items() if "timeline" in apps}
    assert offenders == {}


def test_kernel_admin_imports_no_app():
    modules = imported_apps("kernel/admin")
    assert len(modules) >= 3 and all(apps <= {"kernel"} for apps in modules.values()), modules


def test_snapshots_and_timeline_registered_themselves():
    assert isinstance(cascade.records_under_workspaces(), AgentsUnderWorkspaces)
    assert set(cascade.deletion_counters()) == {"agents", "timeline_rows"}


def test_a_missing_registration_fails_loudly_instead_of_archiving_nothing(monkeypatch):
    monkeypatch.setattr(cascade, "_records_under_workspaces", None)
    with pytest.raises(ImproperlyConfigured):
        cascade.records_under_workspaces()


def test_a_counter_for_an_unknown_count_is_refused():
    with pytest.raises(ImproperlyConfigured):
        cascade.register_deletion_counter("bananas", lambda scope: 0)
    with pytest.raises(ImproperlyConfigured):
        cascade.register_deletion_counter("workspaces", lambda scope: 0)


@pytest.mark.django_db
def test_archiving_an_empty_workspace_or_project_takes_no_agents():
    project = ProjectFactory()
    empty = WorkspaceFactory(project=project)
    assert selectors.workspace_archive_preview(workspace=empty) == selectors.ArchivePreview(workspaces=1)
    result = services.archive_workspace(workspace=empty)
    assert (result.workspaces, result.agents, result.closed_agents, result.changed) == (1, 0, {}, True)
    empty.refresh_from_db()
    assert selectors.workspace_archive_preview(workspace=empty) == selectors.ArchivePreview()
    assert selectors.project_archive_preview(project=project) == selectors.ArchivePreview()
    assert services.unarchive_workspace(workspace=empty).agents == 0


@pytest.mark.django_db
def test_previews_of_archived_or_live_records_are_empty():
    workspace = WorkspaceFactory()
    AgentFactory(workspace=workspace, lifecycle="running")
    assert selectors.project_unarchive_preview(project=workspace.project) == selectors.UnarchivePreview()
    assert selectors.workspace_unarchive_preview(workspace=workspace) == selectors.UnarchivePreview()
    services.archive_project(project=workspace.project)
    workspace.refresh_from_db()
    workspace.project.refresh_from_db()
    assert selectors.project_archive_preview(project=workspace.project) == selectors.ArchivePreview()
    assert selectors.workspace_archive_preview(workspace=workspace) == selectors.ArchivePreview()
