from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection

from chartr import config
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.processes import run_engine

# Fixtures shared across the tree: API clients and tokens, admin clients and settings.
pytest_plugins = ["tests.support.api", "tests.support.admin"]


def services_required() -> bool:
    """CI must exercise PostgreSQL and Redis; elsewhere their tests may skip."""
    return config.value("CHARTR_REQUIRE_SERVICES") or os.environ.get("CI") == "true"


def skip_or_fail(reason: str) -> None:
    if services_required():
        pytest.fail(f"{reason} (CI requires it)")
    pytest.skip(reason)


def pytest_collection_modifyitems(config, items):
    """A test marked ``own_databases`` gives the same answer on either pass: only the SQLite one runs it."""
    if run_engine() != "postgresql":
        return
    skip = pytest.mark.skip(reason="picks its own databases: the run without DATABASE_URL (SQLite) runs it")
    for item in items:
        if item.get_closest_marker("own_databases"):
            item.add_marker(skip)


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    """A private data dir for the test (data snapshots land in it); the database stays pytest-django's test DB."""
    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    settings.CHARTR_SNAPSHOTS_KEEP = 14
    return path


@pytest.fixture
def on_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture
def project_factory():
    return ProjectFactory


@pytest.fixture
def workspace_factory():
    return WorkspaceFactory


@pytest.fixture
def agent_factory():
    return AgentFactory
