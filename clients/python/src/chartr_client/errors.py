"""chartr's error envelope ``{"error": {"code", "message", ...}}`` as typed exceptions.

Every answer that is not a success raises the subclass of :class:`ApiError`
named by its ``code`` (``NotFound`` for ``not_found``, ``ItemConflict`` for
``item_conflict``...); a code this client does not know raises the class of
its status (``ConflictError`` for an unknown 409, say), so newer servers never
break older clients. Failures to reach the server at all, once the retries
are spent, raise :class:`ConnectionFailed`.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any, ClassVar

import httpx

__all__ = [
    "ApiError",
    "Archived",
    "AsgiRequired",
    "Busy",
    "ChartrError",
    "ConflictError",
    "ConnectionFailed",
    "DuplicateDirectory",
    "IdempotencyKeyReused",
    "Invalid",
    "ItemConflict",
    "Maintenance",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotAuthenticated",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PreconditionFailed",
    "SeqConflict",
    "ServerError",
    "ServiceUnavailable",
    "ShuttingDown",
    "Throttled",
    "UnsupportedMediaType",
    "VersionMismatch",
    "error_from_response",
    "retry_after_seconds",
]


class ChartrError(Exception):
    """Anything this client raises."""


class ConnectionFailed(ChartrError):
    """The server could not be reached (or the connection broke) and the retries are spent.
    The transport's own exception is the ``__cause__``."""


class ApiError(ChartrError):
    """An answer in chartr's error envelope. ``code`` is stable and meant for programs."""

    status: ClassVar[int] = 0
    code_name: ClassVar[str | None] = None

    def __init__(self, response: httpx.Response, body: dict[str, Any] | None = None):
        self.response = response
        self.status_code = response.status_code
        self.body: dict[str, Any] = body or {}
        self.code: str = str(self.body.get("code") or self.code_name or "unknown")
        self.message: str = str(self.body.get("message") or response.reason_phrase)
        self.fields: dict[str, Any] = dict(self.body.get("fields") or {})
        self.retry_after: float | None = retry_after_seconds(response)
        super().__init__(f"{self.status_code} {self.code}: {self.message}")


class Invalid(ApiError):
    status, code_name = 400, "invalid"


class NotAuthenticated(ApiError):
    status, code_name = 401, "not_authenticated"


class PermissionDenied(ApiError):
    status, code_name = 403, "permission_denied"


class NotFound(ApiError):
    status, code_name = 404, "not_found"


class MethodNotAllowed(ApiError):
    status, code_name = 405, "method_not_allowed"


class NotAcceptable(ApiError):
    status, code_name = 406, "not_acceptable"


class ConflictError(ApiError):
    """409 ``conflict`` (the id exists), and the base of every other 409."""

    status, code_name = 409, "conflict"


class Archived(ConflictError):
    code_name = "archived"


class DuplicateDirectory(ConflictError):
    code_name = "duplicate_directory"


class SeqConflict(ConflictError):
    """A stale ``expected_head_seq``; ``head_seq`` is the current head."""

    code_name = "seq_conflict"

    @property
    def head_seq(self) -> int | None:
        return self.body.get("head_seq")


class ItemConflict(ConflictError):
    """An ``item_id`` already committed with another item: ``item_id`` and the stored ``seq``."""

    code_name = "item_conflict"

    @property
    def item_id(self) -> str | None:
        return self.body.get("item_id")

    @property
    def seq(self) -> int | None:
        return self.body.get("seq")


class PreconditionFailed(ApiError):
    """412, and the base of ``version_mismatch``."""

    status, code_name = 412, "precondition_failed"


class VersionMismatch(PreconditionFailed):
    """``If-Match`` named another version; ``version`` is the current one."""

    code_name = "version_mismatch"

    @property
    def version(self) -> int | None:
        return self.body.get("version")


class PayloadTooLarge(ApiError):
    status, code_name = 413, "payload_too_large"


class UnsupportedMediaType(ApiError):
    status, code_name = 415, "unsupported_media_type"


class IdempotencyKeyReused(ApiError):
    status, code_name = 422, "idempotency_key_reused"


class Throttled(ApiError):
    status, code_name = 429, "throttled"


class ServerError(ApiError):
    status, code_name = 500, "server_error"


class ServiceUnavailable(ApiError):
    """503, and the base of its codes."""

    status = 503
    code_name: ClassVar[str | None] = None


class Busy(ServiceUnavailable):
    code_name = "busy"


class Maintenance(ServiceUnavailable):
    code_name = "maintenance"


class ShuttingDown(ServiceUnavailable):
    code_name = "shutting_down"


class DatabaseUnavailable(ServiceUnavailable):
    """The database refused or lost the connection (at its connection limit, restarting, a failover)."""

    code_name = "database_unavailable"


class AsgiRequired(ServiceUnavailable):
    code_name = "asgi_required"


class TooManyRows(Invalid):
    """A read of every row (``limit=0``) past the server's ``CHARTR_TIMELINE_READ_ALL_MAX_ROWS``."""

    code_name = "too_many_rows"


class RowNotFound(NotFound):
    """The agent holds no row at that seq (an update of a committed row); ``seq``, ``min_seq``, ``head_seq``."""

    code_name = "row_not_found"


class StreamTicketInvalid(NotAuthenticated):
    """The stream ticket is unknown, expired, spent or its token revoked: mint a new one."""

    code_name = "stream_ticket_invalid"


class StreamTicketOtherAgent(PermissionDenied):
    code_name = "stream_ticket_other_agent"


class RequestTimeout(ApiError):
    status, code_name = 408, "request_timeout"


class LengthRequired(ApiError):
    """A body sent without Content-Length (chunked) straight to chartr; through the proxy it has one."""

    status, code_name = 411, "length_required"


class UriTooLong(ApiError):
    status, code_name = 414, "uri_too_long"


class HeadersTooLarge(ApiError):
    status, code_name = 431, "headers_too_large"


class NotImplementedByServer(ApiError):
    """A method, or a transfer coding, the server does not implement."""

    status, code_name = 501, "not_implemented"


class HttpVersionNotSupported(ApiError):
    status, code_name = 505, "http_version_not_supported"


class TooManyStreams(Throttled):
    code_name = "too_many_streams"


class StreamCapacity(ServiceUnavailable):
    code_name = "stream_capacity"


def _subclasses(cls: type[ApiError]) -> list[type[ApiError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


_ALL = _subclasses(ApiError)
#: Every code this client knows, with its class.
BY_CODE: dict[str, type[ApiError]] = {cls.code_name: cls for cls in _ALL if cls.code_name}
#: The class of each status (its own, not one of its codes').
BY_STATUS: dict[int, type[ApiError]] = {}
for _cls in _ALL:
    BY_STATUS.setdefault(_cls.status, _cls)


def error_from_response(response: httpx.Response) -> ApiError:
    """The exception for a failed answer (its body must have been read)."""
    body: dict[str, Any] | None = None
    try:
        payload = response.json()
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            body = payload["error"]
    except ValueError:
        pass
    code = body.get("code") if body else None
    cls = BY_CODE.get(code) if isinstance(code, str) else None
    if cls is None:
        status = response.status_code
        cls = BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(response, body)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), or None."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
