"""/healthz and /readyz: no auth, nothing leaked, readiness follows the database."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.test import override_settings

from chartr.health import readiness

pytestmark = pytest.mark.django_db


def test_healthz_answers_200_with_only_a_status(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_is_200_when_the_database_is_migrated(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


def test_readyz_is_503_with_the_reason_while_a_migration_is_unapplied(client):
    # Forget the latest timeline migration (inside the test's transaction, rolled back after).
    (leaf,) = MigrationLoader(connection).graph.leaf_nodes("timeline")
    MigrationRecorder(connection).record_unapplied(*leaf)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "migrations_pending"}


def test_readyz_is_503_while_a_migration_in_the_middle_of_the_history_is_unapplied(client):
    # A later migration of the app is recorded as applied: migrate's plan alone would not show it.
    first = min(node for node in MigrationLoader(connection).graph.nodes if node[0] == "timeline")
    MigrationRecorder(connection).record_unapplied(*first)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "migrations_pending"}


def test_readiness_reports_an_unreachable_database(tmp_path):
    unreachable = connection.copy()
    if connection.vendor == "sqlite":
        unreachable.settings_dict["NAME"] = str(tmp_path / "no-such-dir" / "db.sqlite3")
    else:
        unreachable.settings_dict["HOST"], unreachable.settings_dict["PORT"] = "127.0.0.1", "1"
    try:
        assert readiness(unreachable) == "database_unreachable"
    finally:
        unreachable.close()


@override_settings(SECURE_SSL_REDIRECT=True, ALLOWED_HOSTS=["chartr.example.com"])
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_any_host_over_plain_http_without_auth(client, path):
    # Orchestrators probe a container IP over http; the app itself still refuses both.
    response = client.get(path, HTTP_HOST="10.0.0.7:8000")
    assert response.status_code == 200
    assert set(response.json()) == {"status"}
    assert client.get("/admin/login/", HTTP_HOST="10.0.0.7:8000").status_code == 400
    redirected = client.get("/admin/login/", HTTP_HOST="chartr.example.com")
    assert redirected.status_code == 301 and redirected["Location"].startswith("https://")


def test_admin_login_page_renders_with_debug_off_before_collectstatic(client, settings, tmp_path):
    # whitenoise's manifest storage alone would raise "Missing staticfiles manifest entry" here.
    settings.STATIC_ROOT = tmp_path
    assert settings.DEBUG is False
    response = client.get("/admin/login/")
    assert response.status_code == 200
    assert b"/static/admin/css/base.css" in response.content
