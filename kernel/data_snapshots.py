"""A data snapshot before a destructive write, for code that may not import datadir.

Purge, trim, the legacy import and the admin's bulk delete call
``take_data_snapshot(reason=...)`` before they write, so each is one ``restore``
away from undone. datadir registers the snapshot taker in its
``AppConfig.ready()``: the kernel and the apps below datadir never import it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

#: (reason, note, reuse_unchanged, required) -> the name of the snapshot, or None (see take_data_snapshot).
DataSnapshotTaker = Callable[[str, str, bool, bool], "str | None"]

_taker: DataSnapshotTaker | None = None


def register_data_snapshot_taker(taker: DataSnapshotTaker) -> None:
    global _taker
    _taker = taker


def take_data_snapshot(
    *, reason: str, note: str = "", reuse_unchanged: bool = False, required: bool = True
) -> str | None:
    """Snapshot the data now; the snapshot's name.

    ``reuse_unchanged``: when nothing changed since the newest snapshot, that
    one already holds this state; take none and return its name.
    ``required``: with snapshots disabled (``CHARTR_SNAPSHOTS_KEEP=0``) raise,
    so the caller refuses rather than write something it could not undo; when
    false, return None instead. Raises whatever else the taker raises.
    """
    if _taker is None:
        raise ImproperlyConfigured("No data snapshot taker is registered: is the datadir app installed?")
    return _taker(reason, note, reuse_unchanged, required)
