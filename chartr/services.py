"""Small helpers shared by the apps' services."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import models

from chartr.errors import NotFound

M = TypeVar("M", bound=models.Model)


class _Unset:
    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: Marks a keyword argument the caller did not pass, as opposed to passing None.
UNSET: Any = _Unset()


def lock_for_update(model: type[M], pk: Any) -> M:
    """Re-read ``pk`` under a row lock (a no-op on SQLite, where the IMMEDIATE
    transaction already serialises writers). Must run inside a transaction."""
    try:
        return model.objects.select_for_update().get(pk=pk)
    except model.DoesNotExist:
        raise NotFound(f"{model._meta.verbose_name.capitalize()} {pk} does not exist.") from None


def validate_fields(instance: models.Model, *, exclude: list[str] | None = None) -> None:
    """Field-level validation (choices, lengths, validators) without queries.

    Uniqueness and check constraints are left to the database, which holds
    them anyway; the services turn the rare IntegrityError into a clean error.
    """
    instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)


def require_json_object(value: Any, field: str) -> dict:
    if not isinstance(value, dict):
        raise ValidationError({field: ["Must be a JSON object."]}, code="invalid")
    return value


@dataclass(frozen=True)
class ArchiveResult:
    """What an archive took (or, in preview mode, would take)."""

    workspaces: int = 0
    agents: int = 0
    running_agents: int = 0
    changed: bool = False
    preview: bool = False
    agent_ids: list[str] = field(default_factory=list, repr=False)


@dataclass(frozen=True)
class UnarchiveResult:
    workspaces: int = 0
    agents: int = 0
    changed: bool = False


# --- API tokens -----------------------------------------------------------


def hash_token(raw: str) -> str:
    import hashlib

    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def create_api_token(*, name: str, read_only: bool = False, created_by=None) -> tuple["ApiToken", str]:
    """Create a token and return it with its raw value, which is never stored or shown again."""
    import secrets

    from django.db import transaction

    from chartr.models import ApiToken

    if "\x00" in name:
        raise ValidationError({"name": ["A token name must not contain NUL characters."]}, code="invalid")
    raw = "chartr_" + secrets.token_urlsafe(32)
    token = ApiToken(
        name=name, prefix=raw[:14], token_hash=hash_token(raw), read_only=read_only, created_by=created_by
    )
    validate_fields(token)
    with transaction.atomic():
        token.save(force_insert=True)
    return token, raw


#: last_used_at is a hint for operators, not an audit log: refreshing it at
#: most once a minute keeps a busy client from turning every read into a write.
LAST_USED_RESOLUTION_SECONDS = 60


def record_api_token_use(*, token: "ApiToken") -> None:
    """Stamp ``last_used_at`` on an authenticated request, at most once a minute."""
    from django.utils import timezone

    from chartr.models import ApiToken

    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_SECONDS:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def revoke_api_token(*, token: "ApiToken") -> bool:
    """Revoke the token; revoking a revoked token is a no-op. Returns whether it changed."""
    from django.db import transaction
    from django.utils import timezone

    from chartr.models import ApiToken

    with transaction.atomic():
        changed = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    return bool(changed)


# --- First run ------------------------------------------------------------

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
    import os
    import secrets

    from django.contrib.auth import get_user_model
    from django.db import IntegrityError, transaction

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
