"""Refusals of the data snapshot and restore services (see kernel/errors.py for the base)."""

from __future__ import annotations

from kernel.errors import ChartrError, Conflict, NotFound


class OperatorOnly:
    """Raised to the admin and the commands only: the API has no data-snapshot operation."""

    in_api = False


class SnapshotsDisabled(OperatorOnly, Conflict):
    code = "snapshots_disabled"


class StoreBusy(OperatorOnly, Conflict):
    """Another snapshot or restore holds the store lock."""

    code = "store_busy"


class SnapshotNotFound(OperatorOnly, NotFound):
    code = "snapshot_not_found"


class SnapshotCorrupt(OperatorOnly, Conflict):
    """The snapshot cannot be trusted; nothing was changed."""

    code = "snapshot_corrupt"


class EngineMismatch(OperatorOnly, Conflict):
    code = "engine_mismatch"


class SnapshotToolMissing(OperatorOnly, ChartrError):
    code = "tool_missing"
    status = 503


class SnapshotFailed(OperatorOnly, ChartrError):
    code = "snapshot_failed"
    status = 503
