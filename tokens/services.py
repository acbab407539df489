"""Every write to API tokens: create, record a use, revoke."""

from __future__ import annotations

import hashlib
import secrets

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from kernel.services import validate_fields
from tokens.cache import token_cache
from tokens.models import ApiToken


def hash_token(raw: str) -> str:

    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def create_api_token(*, name: str, read_only: bool = False, created_by=None) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is never stored or shown again."""

    if "\x00" in name:
        raise ValidationError({"name": ["A token name must not contain NUL characters."]}, code="invalid")
    raw = "chartr_" + secrets.token_urlsafe(32)
    token = ApiToken(name=name, prefix=raw[:14], token_hash=hash_token(raw), read_only=read_only, created_by=created_by)
    validate_fields(token)
    with transaction.atomic():
        token.save(force_insert=True)
    return token, raw


#: last_used_at is a hint for operators, not an audit log: refreshing it at
#: most once a minute keeps a busy client from turning every read into a write.
#: With the token cache (tokens/cache.py) the stamp seen is the cached token's,
#: so each process writes it at most once a minute per token.
LAST_USED_RESOLUTION_SECONDS = 60


def record_api_token_use(*, token: ApiToken) -> None:
    """Stamp ``last_used_at`` on an authenticated request, at most once a minute."""

    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_SECONDS:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def revoke_api_token(*, token: ApiToken) -> bool:
    """Revoke the token; revoking a revoked token is a no-op. Returns whether it changed."""

    with transaction.atomic():
        changed = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        # Again after the commit: a request in between may have cached the still-active row.
        token_cache.forget(token.token_hash)
        transaction.on_commit(lambda: token_cache.forget(token.token_hash))
    return bool(changed)
