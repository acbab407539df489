from rest_framework import permissions

from chartr.models import ApiToken


class HasApiToken(permissions.BasePermission):
    """Any valid token may read; only a read-write token may write."""

    message = "This token is read-only."

    def has_permission(self, request, view) -> bool:
        if not isinstance(request.auth, ApiToken):
            return False
        return request.method in permissions.SAFE_METHODS or not request.auth.read_only
