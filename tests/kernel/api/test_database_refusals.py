"""Which database errors are the database refusing or losing the connection (503
``database_unavailable`` with ``Retry-After``), as each backend (kernel/db_backends) tells them
from a statement's own fault (a logged 500). Through a real server:
tests/process/test_database_refusals.py."""

from __future__ import annotations

import pytest
from django.db import InterfaceError, OperationalError, ProgrammingError, connection

from kernel.api.errors import api_error

on_postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's errors")
on_sqlite = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's errors")


def wrapped(error_class, cause: Exception):
    """A Django database error as Django raises it: the driver's error is its cause."""
    error = error_class(str(cause))
    error.__cause__ = cause
    return error


def assert_unavailable(exc: Exception) -> None:
    error = api_error(exc)
    assert (error.status, error.body["code"]) == (503, "database_unavailable")
    assert error.headers["Retry-After"] == "2"


@on_postgresql
@pytest.mark.parametrize(
    "name",
    ["TooManyConnections", "AdminShutdown", "CannotConnectNow", "ReadOnlySqlTransaction", "ConnectionFailure"],
)
def test_postgresql_refusing_the_session_is_a_503(name):
    import psycopg.errors

    assert_unavailable(wrapped(OperationalError, getattr(psycopg.errors, name)("refused")))


@on_postgresql
def test_postgresql_losing_the_connection_is_a_503():
    import psycopg

    # libpq's own failures carry no SQLSTATE: refused, reset, "server closed the connection".
    assert_unavailable(wrapped(OperationalError, psycopg.OperationalError("server closed the connection")))
    assert_unavailable(wrapped(InterfaceError, psycopg.InterfaceError("the connection is closed")))


@on_postgresql
def test_a_statements_own_fault_on_postgresql_is_no_refusal():
    import psycopg.errors

    for exc in (
        wrapped(OperationalError, psycopg.errors.QueryCanceled("statement timeout")),
        wrapped(ProgrammingError, psycopg.errors.UndefinedTable("no such table")),
    ):
        assert api_error(exc).status == 500


@on_sqlite
def test_a_sqlite_file_that_cannot_be_opened_is_a_503_and_a_bad_statement_is_not():
    import sqlite3

    assert_unavailable(wrapped(OperationalError, sqlite3.OperationalError("unable to open database file")))
    assert api_error(wrapped(OperationalError, sqlite3.OperationalError("no such table: x"))).status == 500
    assert api_error(wrapped(OperationalError, sqlite3.OperationalError("database is locked"))).body["code"] == "busy"
