"""The copy of the legacy input kept by an import that changes something.

The copy is written under a temporary name and renamed when complete, so an
interrupted import never leaves a half-copy that looks like a backup.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from django.conf import settings

from kernel.files import ensure_private_dir
from legacy.scan import READ_ENTRIES

#: The prefix of a copy in progress; never a finished backup.
PARTIAL_PREFIX = ".partial-"


def back_up_source(source: Path, started_at: dt.datetime) -> Path:
    """Copy the input to ``<data dir>/backup/pre-migration/<timestamp>/``; returns that directory."""
    root = ensure_private_dir(Path(settings.DATA_DIR) / "backup" / "pre-migration")
    name = started_at.strftime("%Y%m%dT%H%M%S.%fZ")
    partial, target = root / f"{PARTIAL_PREFIX}{name}", root / name
    partial.mkdir(mode=0o700)
    try:
        # The parts of the home an import reads, so the parts worth keeping.
        for entry in sorted(READ_ENTRIES):
            if (source / entry).is_dir():
                shutil.copytree(source / entry, partial / entry, symlinks=True)
            elif (source / entry).is_file():
                shutil.copy2(source / entry, partial / entry)
        partial.rename(target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return target


def discard_backup(backup: Path) -> None:
    """Remove the copy of an import that wrote nothing: it protects nothing."""
    shutil.rmtree(backup, ignore_errors=True)
