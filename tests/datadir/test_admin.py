"""The data snapshot admin page: listing, the "Take snapshot now" button, permissions and CSRF."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from datadir.lock import store_lock
from datadir.services import take_snapshot
from tests.datadir.conftest import snapshot_dirs

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:No directory at:UserWarning"),
]
URL = "/admin/data-snapshots/"


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    # The manifest storage needs collectstatic; templates only need URLs here.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def staff(username: str, *perms: str) -> User:
    user = User.objects.create_user(username, password="pw-long-enough-123", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="datadir", codename__in=perms))
    return user


def client_for(user: User, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def test_the_page_lists_snapshots_with_time_size_and_changes(data_dir):
    (data_dir / "a.txt").write_text("x" * 3000)
    first = take_snapshot()
    (data_dir / "b.txt").write_text("y")
    second = take_snapshot()
    user = staff("viewer", "view_data_snapshots", "take_data_snapshot")
    response = client_for(user).get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index(second.name) < html.index(first.name)  # newest first
    assert "data files: 1 added" in html and "first snapshot" in html
    # Sizes are human-readable; the unit depends on how big the test database has grown by now.
    assert re.search(r"\d+(\.\d+)?\xa0(bytes|KB|MB|GB) \(", html)
    assert 'value="Take snapshot now"' in html and "csrfmiddlewaretoken" in html
    assert "not against losing the disk" in html or "do not protect against losing the disk" in html


def test_take_snapshot_now_takes_one_and_redirects_with_a_message(data_dir):
    user = staff("operator", "view_data_snapshots", "take_data_snapshot")
    response = client_for(user).post(URL, follow=True)
    [name] = snapshot_dirs(data_dir)
    assert response.redirect_chain == [(URL, 302)]
    assert f"Data snapshot {name} taken" in response.content.decode()
    assert "taken by operator" in (data_dir / "snapshots" / name / "changes.txt").read_text()


def test_take_snapshot_needs_a_csrf_token(data_dir):
    user = staff("operator", "view_data_snapshots", "take_data_snapshot")
    client = client_for(user, csrf=True)
    assert client.post(URL).status_code == 403
    assert snapshot_dirs(data_dir) == []
    page = client.get(URL)
    token = page.cookies["csrftoken"].value
    assert client.post(URL, {"csrfmiddlewaretoken": token}).status_code == 302
    assert len(snapshot_dirs(data_dir)) == 1


def test_permissions(data_dir):
    anonymous = Client().get(URL)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    nobody = client_for(staff("nobody"))
    assert nobody.get(URL).status_code == 403
    viewer = client_for(staff("viewer", "view_data_snapshots"))
    page = viewer.get(URL)
    assert page.status_code == 200 and "Take snapshot now" not in page.content.decode()
    assert viewer.post(URL).status_code == 403
    assert snapshot_dirs(data_dir) == []
    superuser = User.objects.create_superuser("root", password="pw-long-enough-123")
    assert client_for(superuser).post(URL).status_code == 302
    assert len(snapshot_dirs(data_dir)) == 1


def test_a_busy_store_is_reported_not_waited_for(data_dir):
    client = client_for(staff("operator", "view_data_snapshots", "take_data_snapshot"))
    with store_lock():
        response = client.post(URL, follow=True)
    assert "Another data snapshot or restore is running" in response.content.decode()
    assert snapshot_dirs(data_dir) == []


def test_disabled_snapshots_show_no_button(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    client = client_for(staff("operator", "view_data_snapshots", "take_data_snapshot"))
    html = client.get(URL).content.decode()
    assert "Data snapshots are disabled" in html and "Take snapshot now" not in html
    response = client.post(URL, follow=True)
    assert "nothing was done" in response.content.decode()
    assert snapshot_dirs(data_dir) == []


def test_the_pages_answer_get_and_post_only(data_dir):
    superuser = client_for(User.objects.create_superuser("root", password="pw-long-enough-123"))
    name = take_snapshot().name
    for url in (URL, f"{URL}{name}/restore/"):
        refused = superuser.put(url)
        assert refused.status_code == 405 and refused["Allow"] == "GET, HEAD, POST"
    assert len(snapshot_dirs(data_dir)) == 1
