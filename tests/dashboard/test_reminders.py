"""Every admin page reminds a superuser to change the first start's password and delete its file, until done."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from dashboard.services import ensure_initial_admin

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-new-long-password-4821"


def reminder(client: Client, path: str = "/admin/") -> str | None:
    text = client.get(path).content.decode()
    if 'id="initial-password-reminder"' not in text:
        return None
    return text.split('id="initial-password-reminder">')[1].split("</li>")[0]


@pytest.fixture
def first_start(settings, tmp_path):
    settings.CONFIG_DIR = tmp_path
    result = ensure_initial_admin(config_dir=tmp_path)
    assert result.reason == "created"
    client = Client()
    client.force_login(User.objects.get(username="admin"))
    return client, result.password_file


def test_until_the_password_changes_every_page_asks_to_change_it_then_delete_the_file(first_start):
    client, path = first_start
    for page in ("/admin/", reverse("admin:snapshots_agentsnapshot_changelist"), reverse("data-snapshots")):
        said = reminder(client, page)
        assert said is not None and "still the one the first start generated" in said, page
        assert str(path) in said and reverse("admin:password_change") in said
    assert reminder(client) == reminder(client), "asked again, the same answer"


def test_after_the_change_it_asks_to_delete_the_file_then_says_nothing(first_start):
    client, path = first_start
    password = path.read_text().strip()
    changed = client.post(
        reverse("admin:password_change"),
        {"old_password": password, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert changed.status_code == 302
    said = reminder(client)
    assert said is not None and "is still there: delete it" in said and "change your password" not in said
    path.unlink()
    assert reminder(client) is None


def test_other_staff_and_the_login_page_are_not_told(first_start):
    _client, path = first_start
    staff = User.objects.create_user("viewer", password=NEW_PASSWORD, is_staff=True)
    client = Client()
    assert 'id="initial-password-reminder"' not in client.get(reverse("admin:login")).content.decode()
    client.force_login(staff)
    assert reminder(client) is None and path.exists()
