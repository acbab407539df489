"""The reads of the token commands: the tokens as operators see them, and one found by what they type."""

from __future__ import annotations

from tokens.models import ApiToken
from tokens.services import hash_token

#: What a full token starts with; anything shorter is looked up as a prefix or an id.
TOKEN_START = "chartr_"


def api_tokens(*, include_revoked: bool = True) -> list[ApiToken]:
    """Every token, newest first, without its creator (one query)."""
    tokens = ApiToken.objects.order_by("-created_at", "-pk")
    if not include_revoked:
        tokens = tokens.authenticating()
    return list(tokens)


def api_tokens_matching(reference: str) -> list[ApiToken]:
    """The tokens ``reference`` names: an id (digits), a prefix as ``list_api_tokens`` shows it,
    or the whole token (matched by its hash, so a leaked token can be revoked as it was found)."""
    if reference.isdigit():
        return list(ApiToken.objects.filter(pk=int(reference)))
    if reference.startswith(TOKEN_START) and len(reference) > ApiToken._meta.get_field("prefix").max_length:
        return list(ApiToken.objects.filter(token_hash=hash_token(reference)))
    return list(ApiToken.objects.filter(prefix=reference).order_by("pk"))


def ended_token_ids(token_ids: list[int]) -> set[int]:
    """Those of ``token_ids`` that no longer authenticate (revoked, expired or deleted): the live
    stream ends their streams (timeline/live/hub.py). One query."""
    active = ApiToken.objects.authenticating().filter(pk__in=token_ids).values_list("pk", flat=True)
    return set(token_ids) - set(active)
