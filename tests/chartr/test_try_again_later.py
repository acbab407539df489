"""A write refused for now is a 503 with Retry-After on admin pages too, not Django's 500."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection, connections
from django.urls import reverse

from kernel.errors import UnderMaintenance
from registry import services as registry_services

pytestmark = pytest.mark.django_db


def add_project(admin_client):
    data = {"directory": "/srv/later", "kind": "git", "display_name": "", "git_remote": ""}
    return admin_client.post(reverse("admin:registry_project_add"), data)


def test_an_admin_form_saved_during_a_restore_shows_why_on_the_form(admin_client, monkeypatch):
    def fenced(**kwargs):
        raise UnderMaintenance("A data restore is replacing the database; try again shortly.")

    monkeypatch.setattr(registry_services, "create_project", fenced)
    response = add_project(admin_client)
    assert response.status_code == 200, "the form comes back with the reason, ready to submit again"
    assert "A data restore is replacing the database" in response.content.decode()


def test_a_maintenance_refusal_outside_a_form_is_503_with_retry_after(rf):
    from kernel.api.errors import try_again_later

    response = try_again_later(rf.get("/admin/"), UnderMaintenance("A data restore is replacing the database."))
    assert response.status_code == 503 and response["Retry-After"] == "5"
    api = try_again_later(rf.get("/api/v1/projects"), UnderMaintenance("A data restore is replacing the database."))
    assert api.status_code == 503 and b'"code": "maintenance"' in api.content


def test_an_admin_save_that_waited_out_the_lock_is_503_busy(admin_client, monkeypatch):
    if not hasattr(connection, "is_lock_wait_timeout"):
        pytest.skip("this database backend reports no lock waits")
    message = "database is locked" if connection.vendor == "sqlite" else "canceling statement due to lock timeout"

    def locked(**kwargs):
        raise OperationalError(message)

    monkeypatch.setattr(registry_services, "create_project", locked)
    real = connections["default"]
    monkeypatch.setattr(type(real), "is_lock_wait_timeout", lambda self, error: message in str(error))
    response = add_project(admin_client)
    assert response.status_code == 503 and response["Retry-After"].isdigit()


def test_other_errors_are_left_to_django(admin_client, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(registry_services, "create_project", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        add_project(admin_client)
