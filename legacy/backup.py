"""The copy of the legacy input kept before an import writes anything."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from django.conf import settings

from kernel.files import ensure_private_dir

#: The parts of a legacy home an import reads, so the parts worth keeping.
BACKED_UP = ("projects", "agents", "timelines")


def back_up_source(source: Path, started_at: dt.datetime) -> Path:
    """Copy the input to ``<data dir>/backup/pre-migration/<timestamp>/``; returns that directory."""
    root = ensure_private_dir(Path(settings.DATA_DIR) / "backup" / "pre-migration")
    target = root / started_at.strftime("%Y%m%dT%H%M%S.%fZ")
    target.mkdir(mode=0o700)
    for name in BACKED_UP:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name, symlinks=True)
    return target


def discard_backup(backup: Path) -> None:
    """Remove the copy of an import that wrote nothing: it protects nothing."""
    shutil.rmtree(backup, ignore_errors=True)
