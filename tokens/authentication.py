"""Bearer-token authentication for /api/: ``Authorization: Bearer <token>``."""

from __future__ import annotations

from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions

from tokens.cache import token_cache
from tokens.models import ApiToken
from tokens.services import hash_token, record_api_token_use


class ApiClient:
    """The identity behind a token; DRF's ``request.user`` for API calls."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, token: ApiToken):
        self.token = token
        self.pk = None

    def __str__(self) -> str:
        return f"token {self.token.name}"


def authorization_header(request) -> bytes:
    """DRF's ``get_authorization_header``, read from ``META`` where the server put it: DRF reads
    ``request.headers``, which Django builds from every ``META`` key on first use (about a
    fortieth of a 1-item append's CPU, docs/benchmarks.md), to look up this one."""
    header = request.META.get("HTTP_AUTHORIZATION", b"")
    return header.encode(HTTP_HEADER_ENCODING) if isinstance(header, str) else header


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authorization_header(request)
        if not header:
            return None
        try:
            keyword, _, raw = header.decode("ascii").partition(" ")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The Authorization header is malformed.") from None
        raw = raw.strip()
        if keyword.lower() != self.keyword.lower() or not raw or " " in raw:
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <token>'.")
        # Keyed by the hash: the raw token is never kept in memory past this request.
        token = token_cache.active_token(hash_token(raw))
        if token is None:
            raise exceptions.AuthenticationFailed("The token is unknown or has been revoked.")
        record_api_token_use(token=token)
        return ApiClient(token), token

    def authenticate_header(self, request) -> str:
        return self.keyword
