import pytest

from registry import selectors
from registry.models import Project, Workspace
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db


def test_lookup_by_directory_normalizes_and_never_creates():
    workspace = WorkspaceFactory(directory="/srv/code/x")
    assert selectors.workspace_by_directory(directory="/srv//code/x/") == workspace
    assert selectors.project_by_directory(directory=workspace.project.directory + "/") == workspace.project
    assert selectors.workspace_by_directory(directory="/srv/code/unknown") is None
    assert selectors.workspace_by_directory(directory="relative") is None
    assert (Project.objects.count(), Workspace.objects.count()) == (1, 1)
