"""Reads of projects and workspaces that need thought. Nothing here writes."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from registry.directories import normalize_directory
from registry.models import Project, Workspace


def project_by_directory(*, directory: str) -> Project | None:
    """Look a project up by its directory. Never creates one."""
    try:
        normalized = normalize_directory(directory)
    except ValidationError:
        return None
    return Project.objects.filter(directory=normalized).first()


def workspace_by_directory(*, directory: str) -> Workspace | None:
    """Look a workspace up by its directory. Never creates one."""
    try:
        normalized = normalize_directory(directory)
    except ValidationError:
        return None
    return Workspace.objects.filter(directory=normalized).first()
