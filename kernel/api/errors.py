"""The one place service and framework errors become API responses.

Every error body is ``{"error": {"code", "message", "fields"?}}`` with a
stable ``code``; ``fields`` appears only for validation errors.
"""

from __future__ import annotations

import logging

from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import OperationalError, connection
from django.http import Http404, HttpResponse, JsonResponse
from django.views import defaults as django_defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from kernel.errors import ChartrError

logger = logging.getLogger("kernel.api")

DRF_CODES: list[tuple[type[Exception], int, str]] = [
    (exceptions.ValidationError, 400, "invalid"),
    (exceptions.ParseError, 400, "invalid"),
    (exceptions.NotAuthenticated, 401, "not_authenticated"),
    (exceptions.AuthenticationFailed, 401, "not_authenticated"),
    (exceptions.PermissionDenied, 403, "permission_denied"),
    (exceptions.NotFound, 404, "not_found"),
    (exceptions.MethodNotAllowed, 405, "method_not_allowed"),
    (exceptions.NotAcceptable, 406, "not_acceptable"),
    (exceptions.UnsupportedMediaType, 415, "unsupported_media_type"),
    (exceptions.Throttled, 429, "throttled"),
]


def error_response(status_code: int, code: str, message: str, *, fields=None, extra=None, headers=None) -> Response:
    body: dict = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    if extra:
        body.update(extra)
    return Response({"error": body}, status=status_code, headers=headers)


def _key(key) -> str:
    return f"[{key}]" if isinstance(key, int) else str(key)


def _flatten(detail) -> dict[str, list[str]]:
    """DRF/Django error details as ``{field: [messages]}``; non-field errors under ``non_field_errors``."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            if isinstance(value, dict):
                for sub_key, messages in _flatten(value).items():
                    # DRF reports a list's element errors by index: items[0].field.
                    joiner = "" if sub_key.startswith("[") else "."
                    out[f"{_key(key)}{joiner}{sub_key}"] = messages
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                for index, element in enumerate(value):
                    for sub_key, messages in _flatten(element).items():
                        out[f"{key}[{index}].{sub_key}"] = messages
            else:
                out[_key(key)] = [str(m) for m in (value if isinstance(value, list) else [value])]
        return out
    if isinstance(detail, list):
        return {"non_field_errors": [str(m) for m in detail]}
    return {"non_field_errors": [str(detail)]}


def _first_message(fields: dict[str, list[str]]) -> str:
    for name, messages in fields.items():
        if messages:
            prefix = "" if name == "non_field_errors" else f"{name}: "
            return f"Invalid input. {prefix}{messages[0]}"
    return "Invalid input."


#: Seconds a client is asked to wait before retrying a write that found the database busy.
BUSY_RETRY_AFTER_SECONDS = 1


def is_lock_wait_timeout(exc: Exception) -> bool:
    """Whether the database gave up waiting for another writer's lock.

    Each of chartr's database backends (chartr/db_backends) knows its own
    signs of it; a backend without the method never reports one.
    """
    check = getattr(connection, "is_lock_wait_timeout", None)
    return isinstance(exc, OperationalError) and check is not None and check(exc)


def exception_handler(exc, context):
    # Whatever ran in an enclosing atomic block (ATOMIC_REQUESTS) must not commit.
    set_rollback()
    if is_lock_wait_timeout(exc):
        return error_response(
            503,
            "busy",
            "The database is busy with another write; retry shortly.",
            headers={"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)},
        )
    if isinstance(exc, ChartrError):
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
        return error_response(exc.status, exc.code, exc.message, extra=exc.extra or None, headers=headers)
    if isinstance(exc, DjangoValidationError):
        fields = _flatten(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
        return error_response(400, "invalid", _first_message(fields), fields=fields)
    if isinstance(exc, RequestDataTooBig):
        return error_response(413, "payload_too_large", "The request body is too large.")
    if isinstance(exc, Http404):
        return error_response(404, "not_found", "Not found.")
    if isinstance(exc, DjangoPermissionDenied):
        return error_response(403, "permission_denied", "You do not have permission to do that.")

    for exc_class, status_code, code in DRF_CODES:
        if isinstance(exc, exc_class):
            headers = {}
            if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
                headers["Retry-After"] = str(int(exc.wait))
            if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
                headers["WWW-Authenticate"] = "Bearer"
            if isinstance(exc, exceptions.ValidationError):
                fields = _flatten(exc.detail)
                return error_response(status_code, code, _first_message(fields), fields=fields)
            return error_response(status_code, code, str(exc.detail), headers=headers or None)
    if isinstance(exc, exceptions.APIException):
        return error_response(exc.status_code, exc.default_code, str(exc.detail))

    logger.error("Unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
    return error_response(
        status.HTTP_500_INTERNAL_SERVER_ERROR, "server_error", "The server failed to handle this request."
    )


# --- Errors raised outside DRF views ---------------------------------------
# Unknown URLs, Django's own 400s and anything escaping a view end up in
# Django's handlers (chartr/urls.py points them here). Under /api/ they keep
# the JSON envelope; elsewhere (admin) Django's pages are unchanged.


def _is_api(request) -> bool:
    return request.path_info.startswith("/api/")


def _json_error(status_code: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status_code)


def refuse_early(request, status_code: int, code: str, message: str, *, fields=None) -> HttpResponse:
    """An answer given before any view runs (middleware): the JSON envelope under
    /api/, a plain text page elsewhere (the admin)."""
    if not _is_api(request):
        return HttpResponse(message, status=status_code, content_type="text/plain; charset=utf-8")
    body: dict = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    return JsonResponse({"error": body}, status=status_code)


def try_again_later(request, exc: Exception) -> HttpResponse | None:
    """503 with ``Retry-After`` for a write that could not get the database in time (another
    writer's lock, or a restore's fence), outside DRF too: an admin save is as retryable as an API one.
    None for any other exception."""
    if is_lock_wait_timeout(exc):
        code, message, retry_after = (
            "busy",
            "The database is busy with another write; retry shortly.",
            BUSY_RETRY_AFTER_SECONDS,
        )
    elif isinstance(exc, ChartrError) and exc.status == 503:
        code, message, retry_after = exc.code, exc.message, exc.retry_after
    else:
        return None
    response = refuse_early(request, 503, code, message)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def bad_request(request, exception, template_name="400.html"):
    if not _is_api(request):
        return django_defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return _json_error(413, "payload_too_large", "The request body is too large.")
    if isinstance(exception, DisallowedHost):
        return _json_error(400, "invalid", "The Host header names a host this server does not answer for.")
    return _json_error(400, "invalid", "The request is malformed.")


def permission_denied(request, exception, template_name="403.html"):
    if not _is_api(request):
        return django_defaults.permission_denied(request, exception)
    return _json_error(403, "permission_denied", "You do not have permission to do that.")


def page_not_found(request, exception, template_name="404.html"):
    if not _is_api(request):
        return django_defaults.page_not_found(request, exception)
    return _json_error(404, "not_found", "Nothing exists at this address.")


def server_error(request, template_name="500.html"):
    if not _is_api(request):
        return django_defaults.server_error(request)
    return _json_error(500, "server_error", "The server failed to handle this request.")
