"""Everything under tests/process starts real processes: marked ``process`` (``make test-fast`` leaves them out).

Scratch databases for them come from ``scratch_db``; a migrated one is a
copy of a template migrated once per session (a copied SQLite file, or
``CREATE DATABASE ... TEMPLATE`` on PostgreSQL), not a fresh ``migrate``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.support.processes import MigratedTemplates, ScratchDatabase, postgres_available, run_engine

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.process)


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory):
    templates = MigratedTemplates(tmp_path_factory.mktemp("migrated-templates"))
    yield templates
    templates.drop_all()


@pytest.fixture
def scratch_db(tmp_path, migrated_templates):
    """Make scratch databases, dropped after the test: ``scratch_db(engine=None, *, migrated=False, ...)``.

    ``engine`` defaults to this run's (PostgreSQL when DATABASE_URL points at
    it); ``root`` (default ``tmp_path``) is the dir whose ``data/`` holds a
    SQLite database unless ``path`` says otherwise.
    """
    made: list[ScratchDatabase] = []

    def make(
        engine: str | None = None,
        *,
        migrated: bool = False,
        root: Path | None = None,
        path: Path | None = None,
        purpose: str = "proc",
    ) -> ScratchDatabase:
        engine = engine or run_engine()
        if engine == "postgresql" and not postgres_available():
            skip_or_fail("PostgreSQL is not reachable")
        template = migrated_templates.get(engine) if migrated else None
        database = ScratchDatabase(engine, root or tmp_path, purpose=purpose, path=path, template=template)
        made.append(database.create())
        return database

    yield make
    for database in reversed(made):
        database.drop()
