"""Restoring a data snapshot from the admin: the preview, the confirmation, the restore, the operator's session."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from datadir.services import take_snapshot
from registry.models import Project
from tests.datadir.conftest import build_state, database_state, mutate_state, snapshot_dirs
from tests.factories import ProjectFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:No directory at:UserWarning"),
]
PASSWORD = "pw-long-enough-123"


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def operator_client(username: str = "root") -> tuple[User, Client]:
    user = User.objects.filter(username=username).first() or User.objects.create_superuser(username, password=PASSWORD)
    client = Client()
    client.force_login(user)
    return user, client


def restore_url(name: str) -> str:
    return reverse("data-restore", args=[name])


def test_the_preview_counts_what_the_snapshot_holds_against_now_in_the_admins_words(data_dir):
    operator_client()
    ProjectFactory.create_batch(3)
    snap = take_snapshot()
    ProjectFactory.create_batch(2)
    _, client = operator_client()
    html = client.get(restore_url(snap.name)).content.decode()
    assert "Projects: 3 in the snapshot, 5 now" in html
    users = User.objects.count()  # the operator, and whoever an earlier test left behind
    assert f"Users: {users} in the snapshot, {users} now" in html
    # what changes comes first; the unchanged kinds fold away
    unchanged = html.index('id="restore-unchanged"')
    assert html.index("Projects: 3 in the snapshot") < unchanged < html.index("Users: ")
    assert "registry_project" not in html and "auth_user" not in html  # no table names
    assert "pre-restore" in html and "undoes this restore" in html
    assert 'id="confirm-button"' in html and f"Yes, restore {snap.name}" in html
    # a preview changes nothing
    assert Project.objects.count() == 5 and snapshot_dirs(data_dir) == [snap.name]


def test_the_preview_names_the_snapshots_the_undo_snapshot_rotates_away(data_dir, settings):
    settings.CHARTR_SNAPSHOTS_KEEP = 2
    operator_client()
    first, second = take_snapshot().name, take_snapshot().name
    _, client = operator_client()
    html = client.get(restore_url(second)).content.decode()
    assert 'id="restore-rotated"' in html and f"<code>{first}</code>" in html
    # the snapshot being restored is never rotated away, even when it is the oldest
    assert 'id="restore-rotated"' not in client.get(restore_url(first)).content.decode()


def test_confirming_restores_through_the_service_and_names_the_undo_snapshot(data_dir):
    user, _ = operator_client()
    workspace, _agents = build_state(data_dir)
    snap = take_snapshot()
    before = database_state()
    mutate_state(data_dir, workspace)
    _, client = operator_client()
    response = client.post(restore_url(snap.name), {"confirm": "yes"}, follow=True)
    assert response.redirect_chain == [(reverse("data-snapshots"), 302)]
    [undo] = [name for name in snapshot_dirs(data_dir) if name != snap.name]
    text = response.content.decode()
    assert f"Restored data snapshot {snap.name}" in text
    assert f"The state before is data snapshot {undo}: restore it to undo this restore." in text
    assert "You are still logged in as root" in text
    # everything but the operator's re-login (a new session, last_login, axes' access log) is as the snapshot held it
    after = database_state()
    for table in ("django_session", "auth_user", "axes_accesslog"):
        before.pop(table), after.pop(table)
    assert after == before
    assert User.objects.get().username == "root"
    assert "state before restoring" in (data_dir / "snapshots" / undo / "changes.txt").read_text()
    # the operator is still logged in, as the same user, and can undo at once
    assert client.get(reverse("data-snapshots")).status_code == 200
    undone = client.post(restore_url(undo), {"confirm": "yes"}, follow=True)
    assert f"Restored data snapshot {undo}" in undone.content.decode()
    assert Project.objects.filter(archived_at__isnull=False).exists()  # the mutation's archive is back


def test_an_operator_the_snapshot_does_not_hold_is_logged_out_and_told(data_dir):
    snap = take_snapshot()
    _, client = operator_client("newcomer")
    response = client.post(restore_url(snap.name), {"confirm": "yes"}, follow=True)
    assert response.redirect_chain[0] == (reverse("admin:login"), 302)
    text = response.content.decode()
    assert f"Restored data snapshot {snap.name}" in text
    assert "The snapshot has no active superuser &#x27;newcomer&#x27;, so you were logged out" in text
    assert not User.objects.filter(username="newcomer").exists()
    assert client.get(reverse("data-snapshots")).status_code == 302  # to the login page


def test_without_the_confirmation_nothing_is_restored(data_dir):
    operator_client()
    snap = take_snapshot()
    ProjectFactory()
    _, client = operator_client()
    response = client.post(restore_url(snap.name), {})
    assert response.status_code == 200 and "Yes, restore" in response.content.decode()
    assert Project.objects.count() == 1 and snapshot_dirs(data_dir) == [snap.name]


def test_only_superusers_may_restore_and_csrf_is_checked(data_dir):
    snap = take_snapshot()
    staff = User.objects.create_user("staff", password=PASSWORD, is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="datadir"))
    client = Client()
    client.force_login(staff)
    assert client.get(restore_url(snap.name)).status_code == 403
    assert client.post(restore_url(snap.name), {"confirm": "yes"}).status_code == 403
    assert "Restore&hellip;" not in client.get(reverse("data-snapshots")).content.decode()
    root = User.objects.create_superuser("root", password=PASSWORD)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(root)
    assert strict.post(restore_url(snap.name), {"confirm": "yes"}).status_code == 403
    assert snapshot_dirs(data_dir) == [snap.name]
    assert "Restore&hellip;" in strict.get(reverse("data-snapshots")).content.decode()


def test_unknown_and_incomplete_snapshots_are_refused(data_dir):
    _, client = operator_client()
    response = client.get(restore_url("20260101-000000.000"), follow=True)
    assert "There is no data snapshot" in response.content.decode()
    snap = take_snapshot()
    (data_dir / "snapshots" / snap.name / "manifest.json").unlink()
    html = client.get(restore_url(snap.name)).content.decode()
    assert "This snapshot cannot be restored" in html and 'id="confirm-button"' not in html
    response = client.post(restore_url(snap.name), {"confirm": "yes"})
    assert response.status_code == 200 and snapshot_dirs(data_dir) == [snap.name]


def test_disabled_snapshots_cannot_be_restored_from_the_admin(data_dir, settings):
    _, client = operator_client()
    snap = take_snapshot()
    settings.CHARTR_SNAPSHOTS_KEEP = 0
    html = client.get(restore_url(snap.name)).content.decode()
    assert "Data snapshots are disabled" in html and 'id="confirm-button"' not in html
    assert client.post(restore_url(snap.name), {"confirm": "yes"}).status_code == 200
    assert snapshot_dirs(data_dir) == [snap.name]
