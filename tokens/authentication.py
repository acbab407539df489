"""Bearer-token authentication for DRF's views: ``Authorization: Bearer <token>`` (tokens/access.py)."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from kernel.api.errors import NotAuthenticated
from tokens.access import KEYWORD, bearer_token
from tokens.models import ApiToken


class ApiClient:
    """The identity behind a token; DRF's ``request.user`` for API calls."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, token: ApiToken):
        self.token = token
        self.pk = None

    def __str__(self) -> str:
        return f"token {self.token.name}"


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = KEYWORD

    def authenticate(self, request):
        try:
            token = bearer_token(request)
        except NotAuthenticated as refused:
            # DRF's own class, so its Request records the failure as for any authenticator.
            raise exceptions.AuthenticationFailed(refused.message) from None
        return None if token is None else (ApiClient(token), token)

    def authenticate_header(self, request) -> str:
        return self.keyword
