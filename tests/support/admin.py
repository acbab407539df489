from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages


@pytest.fixture(autouse=True)
def admin_test_settings(settings):
    """Render admin pages without a collectstatic manifest (the real-server test
    collects one), and hash test passwords cheaply."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def staff_client(client, django_user_model):
    """A client logged in as a non-superuser staff member with the given permissions."""

    def make(*codenames: str):
        user = django_user_model.objects.create_user(username="operator", password="pw", is_staff=True)
        for codename in codenames:
            app_label, name = codename.split(".")
            user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=name))
        client.force_login(user)
        return client

    return make


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]
