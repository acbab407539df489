"""Refusals of the data snapshot and restore services (see kernel/errors.py for the base)."""

from __future__ import annotations

from kernel.errors import ChartrError, Conflict, NotFound


class SnapshotsDisabled(Conflict):
    code = "snapshots_disabled"


class StoreBusy(Conflict):
    """Another snapshot or restore holds the store lock."""

    code = "store_busy"


class SnapshotNotFound(NotFound):
    code = "snapshot_not_found"


class SnapshotCorrupt(Conflict):
    """The snapshot cannot be trusted; nothing was changed."""

    code = "snapshot_corrupt"


class EngineMismatch(Conflict):
    code = "engine_mismatch"


class SnapshotToolMissing(ChartrError):
    code = "tool_missing"
    status = 503


class SnapshotFailed(ChartrError):
    code = "snapshot_failed"
    status = 503
