"""kernel/db_backends/postgresql/liveness.py: the per-request health check without a round trip
while the kept connection is quiet, and still a fresh connection after the server ended one."""

from __future__ import annotations

import psycopg
import pytest
from django.core import signals
from django.db import connection

pytestmark = [pytest.mark.skipif("connection.vendor != 'postgresql'"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kept_connection_with_health_checks(monkeypatch):
    """The server's setting (CONN_HEALTH_CHECKS on, connections kept between requests)."""
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", True)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 600)
    connection.close()
    connection.ensure_connection()
    assert connection.health_check_enabled


def between_requests() -> None:
    signals.request_finished.send(sender=None)
    signals.request_started.send(sender=None, environ={})


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def checks_sent(monkeypatch) -> list[bool]:
    sent: list[bool] = []
    is_usable = connection.is_usable

    def counted():
        sent.append(True)
        return is_usable()

    monkeypatch.setattr(connection, "is_usable", counted)
    return sent


@pytest.mark.usefixtures("kept_connection_with_health_checks")
def test_a_quiet_kept_connection_is_reused_without_a_query_to_check_it(monkeypatch):
    first = backend_pid()
    sent = checks_sent(monkeypatch)
    for _ in range(3):
        between_requests()
        assert backend_pid() == first
    assert sent == []


@pytest.mark.usefixtures("kept_connection_with_health_checks")
def test_a_connection_the_server_ended_between_requests_is_replaced_before_the_next_query(monkeypatch):
    ended = backend_pid()
    dsn = connection.connection.info.dsn
    with psycopg.connect(dsn, password=connection.settings_dict.get("PASSWORD") or None, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (ended,))
    sent = checks_sent(monkeypatch)
    between_requests()
    assert backend_pid() != ended
    assert sent == [True]
