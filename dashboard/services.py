"""The operators' first account: created once, on a fresh install."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

INITIAL_ADMIN_USERNAME = "admin"
INITIAL_ADMIN_PASSWORD_FILENAME = "initial-admin-password"


@dataclass(frozen=True)
class InitialAdminResult:
    """What the first-run check did. ``password`` is set only when it was newly generated."""

    created: bool
    reason: str
    password_file: Path | None = None
    password: str | None = field(default=None, repr=False)


def ensure_initial_admin(*, config_dir: Path, username: str = INITIAL_ADMIN_USERNAME) -> InitialAdminResult:
    """Create the first superuser on a fresh install, and never touch an existing account.

    Does nothing when any superuser exists, or when an account named
    ``username`` exists (whatever its rights). Otherwise creates ``username``
    as a superuser with a random password written to
    ``<config_dir>/initial-admin-password`` (mode 0600). If that file survives
    from an earlier install (the database was reset, the config dir kept), its
    password is reused rather than overwritten, so the file stays true.

    The file is written inside the transaction: if it cannot be written, no
    admin is created whose password nobody knows. Concurrent first starts are
    safe: one insert wins the unique username, the others report ``exists``.
    """

    user_model = get_user_model()
    password_file = config_dir / INITIAL_ADMIN_PASSWORD_FILENAME
    if user_model.objects.filter(is_superuser=True).exists():
        return InitialAdminResult(created=False, reason="superuser_exists")
    if user_model.objects.filter(username=username).exists():
        return InitialAdminResult(created=False, reason="username_taken")

    try:
        kept = password_file.read_text().strip()
    except FileNotFoundError:
        kept = ""
    password = kept or secrets.token_urlsafe(18)
    try:
        with transaction.atomic():
            if user_model.objects.filter(is_superuser=True).exists():
                return InitialAdminResult(created=False, reason="superuser_exists")
            user_model.objects.create_superuser(username=username, email="", password=password)
            if not kept:
                fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as handle:
                    handle.write(password + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
    except IntegrityError:
        # Another process created the account between our check and insert.
        return InitialAdminResult(created=False, reason="username_taken")
    if kept:
        return InitialAdminResult(created=True, reason="reused_password_file", password_file=password_file)
    return InitialAdminResult(created=True, reason="created", password_file=password_file, password=password)
