from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client as client_class

pytestmark = pytest.mark.django_db


def log_in(client, password: str):
    return client.post("/admin/login/?next=/admin/", {"username": "boss", "password": password})


@pytest.fixture
def boss(django_user_model):
    return django_user_model.objects.create_superuser(username="boss", password="right-password", email="")


def test_wrong_passwords_lock_the_login_out_until_an_operator_resets_it(client, boss, settings):
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(3):
        response = log_in(client, "wrong")
        assert "_auth_user_id" not in client.session
    # Locked out: the right password is refused too.
    response = log_in(client, "right-password")
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    assert client.get("/admin/").status_code == 302

    call_command("axes_reset")
    response = log_in(client, "right-password")
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.session["_auth_user_id"] == str(boss.pk)


def test_fewer_wrong_passwords_than_the_limit_do_not_lock(client, boss, settings):
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        assert log_in(client, "wrong").status_code == 200
    assert log_in(client, "right-password").status_code == 302


def test_the_default_limit_comes_from_the_environment():
    from django.conf import settings

    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 3600


def test_wrong_passwords_sprayed_over_many_user_names_lock_the_address_out(client, boss, settings):
    settings.AXES_FAILURE_LIMIT = 3
    answers = [client.post("/admin/login/", {"username": name, "password": "guess"}) for name in ("al", "bo", "cy")]
    # The third wrong password reaches the limit: it is answered with the lockout.
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    # The address is locked out, for a user name it never tried too.
    assert log_in(client, "right-password").status_code == 429
    # Another address is not.
    elsewhere = client_class(REMOTE_ADDR="198.51.100.7")
    response = elsewhere.post("/admin/login/?next=/admin/", {"username": "boss", "password": "right-password"})
    assert response.status_code == 302
