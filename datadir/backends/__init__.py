"""Database engines for data snapshots: one DatabaseBackend class per engine (see base.py)."""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.module_loading import import_string

from datadir.backends.base import DatabaseBackend
from datadir.errors import SnapshotFailed
from kernel.engines import for_engine

#: Connection vendor -> the backend class serving it.
BACKENDS = {
    "sqlite": "datadir.backends.sqlite.SQLiteBackend",
    "postgresql": "datadir.backends.postgresql.PostgreSQLBackend",
}


def database_backend(connection: BaseDatabaseWrapper | None = None) -> DatabaseBackend:
    """The backend for ``connection`` (default: the default database's)."""
    if connection is None:
        connection = connections[DEFAULT_DB_ALIAS]
    path = for_engine(connection, BACKENDS, unsupported="Data snapshots support", error=SnapshotFailed)
    return import_string(path)(connection)
