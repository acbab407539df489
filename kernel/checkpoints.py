"""A data snapshot before a destructive write, for code that may not import datadir.

Purge, trim, the legacy import and the admin's bulk delete call
``take_checkpoint(reason=...)`` before they write, so each is one ``restore``
away from undone. datadir registers the snapshot taker in its
``AppConfig.ready()``: the kernel and the apps below datadir never import it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

#: (reason, note) -> the name of the snapshot taken.
CheckpointTaker = Callable[[str, str], str]

_taker: CheckpointTaker | None = None


def register_checkpoint_taker(taker: CheckpointTaker) -> None:
    global _taker
    _taker = taker


def take_checkpoint(*, reason: str, note: str = "") -> str:
    """Snapshot the data now; the snapshot's name.

    Raises what the taker raises (datadir: ``SnapshotsDisabled`` when
    ``CHARTR_SNAPSHOTS_KEEP`` is 0, so the caller refuses rather than write
    something it could not undo).
    """
    if _taker is None:
        raise ImproperlyConfigured("No checkpoint taker is registered: is the datadir app installed?")
    return _taker(reason, note)
