"""The one place service and framework errors become API responses.

Every error body is ``{"error": {"code", "message", "fields"?}}`` with a
stable ``code``; ``fields`` appears only for validation errors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import msgspec
from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError, connection, connections
from django.http import Http404, HttpResponse, JsonResponse
from django.views import defaults as django_defaults
from rest_framework import exceptions, status
from rest_framework.response import Response

from kernel.errors import ChartrError

logger = logging.getLogger("kernel.api")

#: DRF's codes that answer as chartr's own refusals do: a malformed body is ``invalid``, a bad token ``not_authenticated``.
DRF_CODES = {"parse_error": "invalid", "authentication_failed": "not_authenticated"}


class Refusal(ChartrError):
    """A refusal at the HTTP layer (the request, not the state), raised where no service runs:
    the token checks (tokens/access.py), the body parser (kernel/api/parsers.py) and the plain
    views (kernel/api/plain.py). ``fields`` (400 only) and ``headers`` go into the answer."""

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None, headers: dict | None = None):
        super().__init__(message)
        self.fields = fields
        self.headers = headers or {}


class Invalid(Refusal):
    code = "invalid"
    status = 400

    def __init__(self, fields: dict[str, list[str]] | None = None, message: str | None = None):
        super().__init__(message or _first_message(fields or {}), fields=fields)


class NotAuthenticated(Refusal):
    code = "not_authenticated"
    status = 401

    def __init__(self, message: str):
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class PermissionDenied(Refusal):
    code = "permission_denied"
    status = 403


class MethodNotAllowed(Refusal):
    code = "method_not_allowed"
    status = 405

    def __init__(self, method: str, allowed: list[str]):
        super().__init__(f'Method "{method}" not allowed.', headers={"Allow": ", ".join(allowed)})


class NotAcceptable(Refusal):
    code = "not_acceptable"
    status = 406


class UnsupportedMediaType(Refusal):
    code = "unsupported_media_type"
    status = 415


class Throttled(Refusal):
    code = "throttled"
    status = 429

    def __init__(self, wait: int):
        super().__init__(f"Request was throttled. Expected available in {wait} seconds.")
        self.retry_after = wait


@dataclass(frozen=True)
class ApiError:
    """One error answer: status, the ``error`` object of the envelope, and its headers."""

    status: int
    body: dict
    headers: dict | None = None

    def envelope(self) -> dict:
        return {"error": self.body}


def _error(status_code: int, code: str, message: str, *, fields=None, extra=None, headers=None) -> ApiError:
    body: dict = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    if extra:
        body.update(extra)
    return ApiError(status_code, body, headers or None)


def _key(key) -> str:
    return f"[{key}]" if isinstance(key, int) else str(key)


def _flatten(detail) -> dict[str, list[str]]:
    """DRF/Django error details as ``{field: [messages]}``; non-field errors under ``non_field_errors``."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                value = dict(enumerate(value))  # a list's element errors, by index: items[0].field
            if isinstance(value, dict):
                for sub_key, messages in _flatten(value).items():
                    joiner = "" if sub_key.startswith("[") else "."
                    out[f"{_key(key)}{joiner}{sub_key}"] = messages
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


#: Seconds a client is asked to wait when the database refused or lost the connection.
UNAVAILABLE_RETRY_AFTER_SECONDS = 2
UNAVAILABLE_MESSAGE = "The database refused or lost the connection (its connection limit, a restart); retry shortly."


def database_refusal(exc: Exception) -> tuple[str, str, int] | None:
    """``(code, message, retry_after)`` of a 503 for a database that could not take the request
    now (another writer's lock, or the database refusing or losing the connection: its connection
    limit, a restart, a failover), else None. Each of chartr's database backends (kernel/db_backends)
    knows its own signs of both."""
    if isinstance(exc, OperationalError) and connection.is_lock_wait_timeout(exc):
        return "busy", "The database is busy with another write; retry shortly.", BUSY_RETRY_AFTER_SECONDS
    if isinstance(exc, (OperationalError, InterfaceError)) and connection.is_unavailable(exc):
        logger.warning("The database refused or lost the connection: %s", exc)
        return "database_unavailable", UNAVAILABLE_MESSAGE, UNAVAILABLE_RETRY_AFTER_SECONDS
    return None


def api_error(exc: Exception, *, where: str = "") -> ApiError:
    """The answer to ``exc``: the one mapping from service, Django, DRF and HTTP-layer errors to the
    envelope, for DRF's exception handler and the plain views alike. Anything unknown is a logged 500."""
    refusal = database_refusal(exc)
    if refusal is not None:
        code, message, retry_after = refusal
        return _error(503, code, message, headers={"Retry-After": str(retry_after)})
    if isinstance(exc, ChartrError):
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
        fields = getattr(exc, "fields", None)
        return _error(exc.status, exc.code, exc.message, fields=fields, extra=exc.extra or None, headers=headers)
    if isinstance(exc, DjangoValidationError):
        fields = _flatten(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
        return _error(400, "invalid", _first_message(fields), fields=fields)
    if isinstance(exc, RequestDataTooBig):
        return _error(413, "payload_too_large", "The request body is too large.")
    if isinstance(exc, Http404):
        return _error(404, "not_found", "Not found.")
    if isinstance(exc, DjangoPermissionDenied):
        return _error(403, "permission_denied", "You do not have permission to do that.")
    if isinstance(exc, exceptions.APIException):
        code = DRF_CODES.get(exc.default_code, exc.default_code)
        if isinstance(exc, exceptions.ValidationError):
            fields = _flatten(exc.detail)
            return _error(exc.status_code, code, _first_message(fields), fields=fields)
        headers = {}
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(int(exc.wait))
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            headers["WWW-Authenticate"] = "Bearer"
        return _error(exc.status_code, code, str(exc.detail), headers=headers)
    logger.error("Unhandled error in %s", where or "a view", exc_info=exc)
    return _error(status.HTTP_500_INTERNAL_SERVER_ERROR, "server_error", "The server failed to handle this request.")


def roll_back_the_request() -> None:
    """Whatever ran in an enclosing atomic block (ATOMIC_REQUESTS) must not commit (as DRF's ``set_rollback``)."""
    for database in connections.all(initialized_only=True):
        if database.settings_dict["ATOMIC_REQUESTS"] and database.in_atomic_block:
            database.set_rollback(True)


def exception_handler(exc, context):
    """DRF's ``EXCEPTION_HANDLER``."""
    roll_back_the_request()
    error = api_error(exc, where=context.get("view").__class__.__name__)
    return Response(error.envelope(), status=error.status, headers=error.headers)


def error_json_response(exc: Exception, *, where: str = "") -> HttpResponse:
    """The same answer outside DRF: the plain views (kernel/api/plain.py) and the live stream."""
    roll_back_the_request()
    error = api_error(exc, where=where)
    response = HttpResponse(msgspec.json.encode(error.envelope()), status=error.status, content_type="application/json")
    for name, value in (error.headers or {}).items():
        response[name] = value
    return response


# --- Errors raised outside DRF views ---------------------------------------
# Unknown URLs, Django's own 400s and anything escaping a view end up in
# Django's handlers (chartr/urls.py points them here). Under /api/ they keep
# the JSON envelope; elsewhere (admin) Django's pages are unchanged.


def _is_api(request) -> bool:
    return request.path_info.startswith("/api/")


def _json_error(status_code: int, code: str, message: str, *, fields=None) -> JsonResponse:
    return JsonResponse(_error(status_code, code, message, fields=fields).envelope(), status=status_code)


def refuse_early(request, status_code: int, code: str, message: str, *, fields=None) -> HttpResponse:
    """An answer given before any view runs (middleware): the JSON envelope under
    /api/, a plain text page elsewhere (the admin)."""
    if not _is_api(request):
        return HttpResponse(message, status=status_code, content_type="text/plain; charset=utf-8")
    return _json_error(status_code, code, message, fields=fields)


def try_again_later(request, exc: Exception) -> HttpResponse | None:
    """503 with ``Retry-After`` for a write that could not get the database in time (another
    writer's lock, or a restore's fence), outside DRF too: an admin save is as retryable as an API one.
    None for any other exception."""
    refusal = database_refusal(exc)
    if refusal is not None:
        code, message, retry_after = refusal
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
