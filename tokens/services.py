"""Every write to API tokens: create, record a use, revoke; and to stream tickets: mint, check, spend."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from kernel.api.idempotency import Answer
from kernel.errors import Conflict, IdempotencyKeyReused
from kernel.services import insert_carried_over, reset_id_sequences, validate_fields
from tokens.cache import token_cache
from tokens.errors import StreamTicketInvalid, StreamTicketOtherAgent
from tokens.models import ApiToken, IdempotentCreate, StreamTicket


def hash_token(raw: str) -> str:

    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def create_api_token(
    *, name: str, read_only: bool = False, created_by=None, expires_at: dt.datetime | None = None
) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is never stored or shown again.
    ``expires_at``: when it stops authenticating by itself (None: never)."""

    if "\x00" in name:
        raise ValidationError({"name": ["A token name must not contain NUL characters."]}, code="invalid")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": ["A new token must expire in the future."]}, code="invalid")
    raw = "chartr_" + secrets.token_urlsafe(32)
    token = ApiToken(
        name=name,
        prefix=raw[:14],
        token_hash=hash_token(raw),
        read_only=read_only,
        created_by=created_by,
        expires_at=expires_at,
    )
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


def create_idempotently(
    *, token: ApiToken, key: str, fingerprint: str, lifetime: dt.timedelta, create: Callable[[], Answer]
) -> Answer:
    """``create()``'s answer, remembered under (token, key); a retry with the same
    fingerprint gets it again without creating anything, another fingerprint is a 422.

    The key's row is written before ``create()`` runs, in the same transaction,
    so a racing retry waits on the unique constraint and then replays. A new key
    deletes the token's expired ones.
    """
    try:
        with transaction.atomic():
            stored = IdempotentCreate.objects.select_for_update().filter(token=token, key=key).first()
            now = timezone.now()
            if stored is not None and stored.created_at > now - lifetime:
                return _replay(stored, fingerprint)
            # The token's expired keys go (this one's too, if it expired): the table holds
            # at most one lifetime of keys per token, with no sweep to schedule.
            IdempotentCreate.objects.filter(token=token, created_at__lte=now - lifetime).delete()
            try:
                with transaction.atomic():
                    record = IdempotentCreate.objects.create(
                        token=token, key=key, fingerprint=fingerprint, status=200, body={}, created_at=now
                    )
            except IntegrityError:
                raise _LostRace from None
            answer = create()
            record.status, record.body, record.headers = answer.status, answer.body, answer.headers
            record.save(update_fields=["status", "body", "headers"])
            return answer
    except _LostRace:
        stored = IdempotentCreate.objects.filter(token=token, key=key).first()
        if stored is None:
            raise Conflict("Another request with this Idempotency-Key was running; retry it.") from None
        return _replay(stored, fingerprint)


class _LostRace(Exception):
    """Another request committed this key first."""


def _replay(stored: IdempotentCreate, fingerprint: str) -> Answer:
    if stored.fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was first sent with another request (method, path or body); "
            "a retry must send the same request, a new create needs a new key."
        )
    return Answer(status=stored.status, body=stored.body, headers=stored.headers)


#: What every stream ticket starts with (kernel/logs.py redacts them, as it redacts tokens).
STREAM_TICKET_PREFIX = "chartr_st_"


def mint_stream_ticket(*, token: ApiToken, agent_id: str) -> tuple[StreamTicket, str]:
    """A new single-use ticket for ``agent_id``'s stream, and its raw value (never stored).

    Minting again mints another: each ticket is independent, and opens one stream once.
    The tickets that expired before now are deleted here, so the table stays small."""
    now = timezone.now()
    raw = STREAM_TICKET_PREFIX + secrets.token_urlsafe(32)
    lifetime = dt.timedelta(seconds=settings.CHARTR_STREAM_TICKET_SECONDS)
    ticket = StreamTicket(
        token=token, ticket_hash=hash_token(raw), agent_id=agent_id, created_at=now, expires_at=now + lifetime
    )
    with transaction.atomic():
        StreamTicket.objects.filter(expires_at__lte=now).delete()
        ticket.save(force_insert=True)
    return ticket, raw


def check_stream_ticket(*, raw: str, agent_id: str) -> StreamTicket:
    """The ticket, if it may open ``agent_id``'s stream now; not spent yet (the stream spends it
    once its rate is checked and its slot taken, so a refusal leaves it usable).

    Unknown, expired, spent, or its token revoked or expired: ``StreamTicketInvalid``; another agent's:
    ``StreamTicketOtherAgent``."""
    found = list(StreamTicket.objects.select_related("token").filter(ticket_hash=hash_token(raw)).order_by()[:1])
    ticket = found[0] if found else None
    if (
        ticket is None
        or not ticket.token.is_active
        or ticket.used_at is not None
        or ticket.expires_at <= timezone.now()
    ):
        raise StreamTicketInvalid(TICKET_INVALID_MESSAGE)
    if ticket.agent_id != agent_id:
        raise StreamTicketOtherAgent("This stream ticket opens another agent's stream.")
    return ticket


def spend_stream_ticket(*, ticket: StreamTicket) -> None:
    """Mark the ticket used. Of two requests racing with one ticket, one conditional update wins;
    the other is refused (``StreamTicketInvalid``), as is a ticket that expired meanwhile."""
    now = timezone.now()
    spent = StreamTicket.objects.filter(pk=ticket.pk, used_at__isnull=True, expires_at__gt=now).update(used_at=now)
    if not spent:
        raise StreamTicketInvalid(TICKET_INVALID_MESSAGE)


TICKET_INVALID_MESSAGE = (
    "The stream ticket is unknown, expired or already used (a ticket opens one stream, once); "
    "mint a new one with POST .../timeline/stream-tickets."
)


def carry_over_api_tokens(*, tokens: list[ApiToken]) -> None:
    """Insert tokens exactly as an instance export holds them (ids, hashes, times, revocations),
    inside the caller's transaction; the raw tokens, never stored, keep working."""
    insert_carried_over(ApiToken, list(tokens))
    reset_id_sequences(ApiToken)
