"""File-system helpers with no Django in them."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) owner-only; tighten it if it already exists."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


@contextmanager
def replaced_atomically(path: Path, *, sync: bool = True) -> Iterator[Path]:
    """A new temporary file beside ``path`` for the block to write (named with ``path``'s suffix, so a
    writer that picks a format by it picks the same), renamed over ``path`` once the block ends: a
    reader never sees ``path`` half-written. ``sync``: flushed to disk first. On an error it is removed."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp" + path.suffix)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if sync:
            with open(tmp, "rb") as written:
                os.fsync(written.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
