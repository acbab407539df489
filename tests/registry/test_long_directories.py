"""Directories up to MAX_DIRECTORY_LENGTH are stored, unique and found on both databases.

Before, the unique index was on the directory itself: PostgreSQL's btree
refused an index row over ~2,700 bytes, so ~3,000 incompressible characters
were a 500 there and fine on SQLite. Uniqueness and lookups now go through
``directory_hash``.
"""

from __future__ import annotations

import hashlib
import random
import string

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from registry.directories import MAX_DIRECTORY_LENGTH, directory_hash
from registry.models import Project, Workspace
from registry.services import create_project
from tests.factories import ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error

# Letters, digits and non-ASCII: nothing a compressor or a prefix could shorten.
ALPHABET = string.ascii_letters + string.digits + "éßøλжк中文字"


def random_directory(length: int, seed: int) -> str:
    rng = random.Random(seed)
    segments, size = [], 0
    while size < length:
        segment = "".join(rng.choice(ALPHABET) for _ in range(min(rng.randint(20, 200), length - size - 1) or 1))
        segments.append(segment)
        size += len(segment) + 1
    return ("/" + "/".join(segments))[:length].rstrip("/")


@pytest.mark.django_db
def test_a_4000_character_directory_is_created_found_and_unique_through_the_api(api):
    directory = random_directory(4000, seed=12)
    assert len(directory) >= 3990 and len(directory.encode()) > 2704
    project = api.post("/api/v1/projects", {"directory": directory, "kind": "git"}, format="json")
    assert project.status_code == 201, project.content[:500]
    workspace = api.post(
        "/api/v1/workspaces",
        {"project_id": project.json()["id"], "directory": directory, "kind": "checkout"},
        format="json",
    )
    assert workspace.status_code == 201, workspace.content[:500]

    for path, created in (("/api/v1/projects", project), ("/api/v1/workspaces", workspace)):
        found = api.get(path, {"directory": directory + "/"})
        assert found.status_code == 200, found.content[:500]
        assert [row["id"] for row in found.json()["results"]] == [created.json()["id"]]
        assert found.json()["results"][0]["directory"] == directory
        # One character less is another directory.
        assert api.get(path, {"directory": directory[:-1]}).json()["results"] == []

    again = api.post("/api/v1/projects", {"directory": directory, "kind": "git"}, format="json")
    assert_error(again, 409, "duplicate_directory")
    assert Project.objects.count() == 1


@pytest.mark.django_db
def test_a_directory_at_the_limit_is_stored_and_one_beyond_is_refused(api):
    at_limit = random_directory(MAX_DIRECTORY_LENGTH, seed=1)
    at_limit = at_limit + "x" * (MAX_DIRECTORY_LENGTH - len(at_limit))
    assert len(at_limit) == MAX_DIRECTORY_LENGTH
    assert api.post("/api/v1/projects", {"directory": at_limit, "kind": "git"}, format="json").status_code == 201
    too_long = api.post("/api/v1/projects", {"directory": at_limit + "y", "kind": "git"}, format="json")
    assert_error(too_long, 400, "invalid", fields=["directory"])


@pytest.mark.django_db
def test_the_hash_follows_the_directory_on_every_orm_write_path():
    project = create_project(directory="/srv/a", kind="git")
    assert project.directory_hash == hashlib.sha256(b"/srv/a").hexdigest()
    workspace = WorkspaceFactory(project=project)
    assert Workspace.objects.get(pk=workspace.pk).directory_hash == directory_hash(workspace.directory)

    bulk = Project.objects.bulk_create([Project(directory="/srv/bulk", kind="git", display_name="bulk")])
    assert Project.objects.get(pk=bulk[0].pk).directory_hash == directory_hash("/srv/bulk")

    Project.objects.filter(pk=project.pk).update(directory="/srv/moved")
    assert Project.objects.at_directory("/srv/moved").get().pk == project.pk

    project.refresh_from_db()
    project.directory = "/srv/bulk-moved"
    Project.objects.bulk_update([project], ["directory"])
    assert Project.objects.at_directory("/srv/bulk-moved").get().pk == project.pk
    assert not Project.objects.at_directory("/srv/moved").exists()


@pytest.mark.django_db
def test_the_directory_lookup_uses_the_hash_index():
    ProjectFactory.create_batch(3)
    with connection.cursor() as cursor:
        sql, params = Project.objects.at_directory("/srv/x").query.sql_with_params()
        explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
        cursor.execute("SET LOCAL enable_seqscan = off" if connection.vendor == "postgresql" else "SELECT 1")
        cursor.execute(explain + sql, params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    # PostgreSQL names the constraint's index; SQLite an autoindex, searched by directory_hash.
    assert "project_directory_hash_unique" in plan or "INDEX sqlite_autoindex" in plan, plan
    assert "directory_hash" in plan, plan


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_hash_of_existing_rows():
    executor = MigrationExecutor(connection)
    executor.migrate([("registry", "0002_paseo_fields")])
    old_apps = executor.loader.project_state([("registry", "0002_paseo_fields")]).apps
    OldProject = old_apps.get_model("registry", "Project")  # noqa: N806 (a model class)
    OldWorkspace = old_apps.get_model("registry", "Workspace")  # noqa: N806
    long_directory = random_directory(2000, seed=3)
    old_project = OldProject.objects.create(directory=long_directory, kind="git", display_name="p")
    OldWorkspace.objects.create(project=old_project, directory="/srv/w", kind="checkout", display_name="w")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert Project.objects.at_directory(long_directory).get().pk == old_project.pk
    assert Workspace.objects.get().directory_hash == directory_hash("/srv/w")
