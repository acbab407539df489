from rest_framework import permissions

from tokens.access import READ_ONLY_MESSAGE, token_may
from tokens.models import ApiToken


class HasApiToken(permissions.BasePermission):
    """Any valid token may read; only a read-write token may write (``token_may``)."""

    message = READ_ONLY_MESSAGE

    def has_permission(self, request, view) -> bool:
        return token_may(request.auth, request.method)


class HasApiTokenOrStaffSession(permissions.BasePermission):
    """For the schema and the docs page: a token, or a staff member logged in to the admin.

    A browser cannot send a bearer token when it opens /api/v1/docs, so the
    admin session is the way in for people; programs use their token.
    """

    message = "Send a bearer token, or log in to the admin as staff."

    def has_permission(self, request, view) -> bool:
        if isinstance(request.auth, ApiToken):
            return True
        user = request.user
        return bool(user is not None and getattr(user, "is_active", False) and getattr(user, "is_staff", False))
