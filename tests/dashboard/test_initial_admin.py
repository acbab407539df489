"""First run creates `admin` once, with a private password file, and never touches existing accounts."""

from __future__ import annotations

import io
import stat

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from dashboard.services import ensure_initial_admin

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_creates_admin_with_a_random_password_written_owner_only(tmp_path):
    result = ensure_initial_admin(config_dir=tmp_path)
    assert result.created and result.reason == "created"
    password_file = tmp_path / "initial-admin-password"
    assert result.password_file == password_file
    assert password_file.read_text() == result.password + "\n"
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.is_active
    assert admin.check_password(result.password)
    assert len(result.password) >= 20


def test_second_run_is_a_no_op_that_keeps_account_and_file(tmp_path):
    first = ensure_initial_admin(config_dir=tmp_path)
    password_hash = User.objects.get(username="admin").password
    again = ensure_initial_admin(config_dir=tmp_path)
    assert (again.created, again.reason, again.password) == (False, "superuser_exists", None)
    assert User.objects.count() == 1
    assert User.objects.get(username="admin").password == password_hash
    assert (tmp_path / "initial-admin-password").read_text() == first.password + "\n"


def test_does_nothing_when_any_superuser_exists(tmp_path):
    User.objects.create_superuser(username="operator", email="", password="chosen-by-operator")
    result = ensure_initial_admin(config_dir=tmp_path)
    assert (result.created, result.reason) == (False, "superuser_exists")
    assert not User.objects.filter(username="admin").exists()
    assert not (tmp_path / "initial-admin-password").exists()


def test_never_touches_an_existing_account_named_admin(tmp_path):
    User.objects.create_user(username="admin", password="their-own-password")
    result = ensure_initial_admin(config_dir=tmp_path)
    assert (result.created, result.reason) == (False, "username_taken")
    admin = User.objects.get(username="admin")
    assert not admin.is_superuser and admin.check_password("their-own-password")
    assert not (tmp_path / "initial-admin-password").exists()


def test_a_surviving_password_file_is_reused_not_overwritten(tmp_path):
    # The database was reset but the config volume kept: the file stays true.
    password_file = tmp_path / "initial-admin-password"
    password_file.write_text("kept-from-the-first-install\n")
    password_file.chmod(0o600)
    result = ensure_initial_admin(config_dir=tmp_path)
    assert (result.created, result.reason, result.password) == (True, "reused_password_file", None)
    assert password_file.read_text() == "kept-from-the-first-install\n"
    assert User.objects.get(username="admin").check_password("kept-from-the-first-install")


def test_an_unwritable_config_dir_creates_no_admin(tmp_path):
    missing_dir = tmp_path / "missing"
    with pytest.raises(FileNotFoundError):
        ensure_initial_admin(config_dir=missing_dir)
    assert not User.objects.filter(username="admin").exists()


def test_command_prints_the_password_once(settings, tmp_path):
    settings.CONFIG_DIR = tmp_path
    first, second = io.StringIO(), io.StringIO()
    call_command("ensure_initial_admin", stdout=first)
    call_command("ensure_initial_admin", stdout=second)
    password = (tmp_path / "initial-admin-password").read_text().strip()
    assert f"Created superuser 'admin' with password: {password}" in first.getvalue()
    assert str(tmp_path / "initial-admin-password") in first.getvalue()
    assert password not in second.getvalue()
    assert second.getvalue() == ""
