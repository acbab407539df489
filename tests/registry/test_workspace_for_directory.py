"""``registry.services.workspace_for_directory``: the one rule that places an agent's cwd."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from registry.models import Project, Workspace
from registry.services import create_project, create_workspace, workspace_for_directory

pytestmark = pytest.mark.django_db


def test_a_cwd_below_a_workspace_lands_in_the_deepest_one_above_it():
    project = create_project(directory="/src/app", kind="git")
    outer = create_workspace(project=project, directory="/src/app", kind="checkout")
    inner = create_workspace(project=project, directory="/src/app/packages/web", kind="worktree")

    assert workspace_for_directory("/src/app/packages/web/src").pk == inner.pk
    assert workspace_for_directory("/src/app/packages/api").pk == outer.pk
    assert workspace_for_directory("/src/app").pk == outer.pk
    assert Workspace.objects.count() == 2


def test_an_unknown_cwd_gets_a_directory_project_and_a_checkout_workspace_once():
    workspace = workspace_for_directory("/home/me/new//thing/", git_remote="git@example.com:me/thing", branch="main")

    assert workspace.directory == "/home/me/new/thing"
    assert workspace.kind == Workspace.Kind.CHECKOUT
    assert workspace.branch == "main"
    assert workspace.project.kind == Project.Kind.DIRECTORY
    assert workspace.project.directory == "/home/me/new/thing"
    assert workspace.project.git_remote == "git@example.com:me/thing"
    again = workspace_for_directory("/home/me/new/thing")
    assert again.pk == workspace.pk
    assert (Project.objects.count(), Workspace.objects.count()) == (1, 1)


def test_a_project_already_at_the_directory_gets_the_new_workspace():
    project = create_project(directory="/work/repo", kind="git")

    workspace = workspace_for_directory("/work/repo")

    assert workspace.project_id == project.pk
    assert Project.objects.count() == 1


def test_a_sibling_with_a_common_prefix_is_not_above():
    project = create_project(directory="/src/app", kind="git")
    create_workspace(project=project, directory="/src/app", kind="checkout")

    workspace = workspace_for_directory("/src/application")

    assert workspace.directory == "/src/application"


@pytest.mark.parametrize("bad", ["relative/path", "/a/../b", "/a\x00b", 17])
def test_a_bad_directory_is_refused_and_writes_nothing(bad):
    with pytest.raises(ValidationError):
        workspace_for_directory(bad)
    assert (Project.objects.count(), Workspace.objects.count()) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_racing_callers_get_the_same_workspace():
    results, errors = [], []
    barrier = threading.Barrier(4)

    def place():
        try:
            barrier.wait()
            results.append(workspace_for_directory("/race/dir").pk)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=place) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(set(results)) == 1
    assert Workspace.objects.count() == 1
