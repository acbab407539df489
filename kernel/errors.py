"""Errors the services raise. They are plain Python/Django errors: the API's
exception handler, the admin and the management commands each translate them
for their own audience, and the ``code`` is the stable machine-readable part.
"""

from __future__ import annotations


class ChartrError(Exception):
    """Base class for refusals a client can act on."""

    code = "conflict"
    status = 409
    #: Seconds a client is asked to wait before retrying (a ``Retry-After`` header), or None.
    retry_after: int | None = None
    #: Whether an API operation can answer it (the OpenAPI document lists the codes of those).
    in_api = True

    def __init__(self, message: str, *, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class NotFound(ChartrError):
    code = "not_found"
    status = 404


class Conflict(ChartrError):
    code = "conflict"
    status = 409


class ArchivedConflict(Conflict):
    """The target, or its parent, is archived."""

    code = "archived"


class InputInvalid(ChartrError):
    """An importer's input has problems, each naming its file and place; nothing was written. Only
    the import commands raise it (no API operation answers it)."""

    status = 400
    in_api = False
    #: What the problems are in, as the message names it.
    source = "the input"

    def __init__(self, problems=(), *, message: str | None = None):
        self.problems = list(problems)
        count = len(self.problems)
        super().__init__(
            message or f"{count} problem{'s' if count != 1 else ''} in {self.source}; nothing was imported.",
            extra={"problems": [str(problem) for problem in self.problems]},
        )


class VersionMismatch(ChartrError):
    """``If-Match`` names another version than the current one (``version``); ETags compare as strings."""

    code = "version_mismatch"
    status = 412


class PreconditionFailed(ChartrError):
    """An ``If-Match`` sent to an operation that has no entity tag to hold it to."""

    code = "precondition_failed"
    status = 412


class PayloadTooLarge(ChartrError):
    code = "payload_too_large"
    status = 413


class UnderMaintenance(ChartrError):
    """A data restore is replacing the database: the write was not made, and can be retried."""

    code = "maintenance"
    status = 503
    retry_after = 5


class IdempotencyKeyReused(ChartrError):
    """An ``Idempotency-Key`` sent again with another request than the one it first came with."""

    code = "idempotency_key_reused"
    status = 422
