"""Where data snapshots live and how they are named and described.

Layout of ``<data dir>/snapshots/<YYYYMMDD-HHMMSS.mmm>/`` (UTC):

- ``manifest.json`` written last, before the directory is renamed into place;
  a directory without it is never treated as a snapshot;
- ``changes.txt`` what changed since the previous snapshot;
- ``db/chartr.sqlite3`` (SQLite) or ``db/chartr.pgdump`` (pg_dump -Fc);
- ``files/...`` the other files of the data dir, hard-linked to the previous
  snapshot's copy when unchanged.

Work in progress lives in dot-directories (``.tmp-*``, ``.restore-*``,
``.trash-*``) which listings ignore and the next run under the lock removes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from datadir.lock import LOCKS_DIRNAME
from kernel.files import ensure_private_dir

SNAPSHOTS_DIRNAME = "snapshots"
#: Top-level entries of the data dir that are never part of a snapshot.
EXCLUDED_TOP_LEVEL = frozenset({SNAPSHOTS_DIRNAME, "backup", LOCKS_DIRNAME})
NAME_PATTERN = re.compile(r"^\d{8}-\d{6}\.\d{3}$")
_NAME_TIME_FORMAT = "%Y%m%d-%H%M%S"
MANIFEST_NAME = "manifest.json"
CHANGES_NAME = "changes.txt"
DB_DIRNAME = "db"
FILES_DIRNAME = "files"
SQLITE_DUMP_NAME = "chartr.sqlite3"
POSTGRES_DUMP_NAME = "chartr.pgdump"
MANIFEST_FORMAT = 1
WORK_PREFIXES = (".tmp-", ".restore-", ".trash-")
_CHUNK = 1 << 20


def data_dir() -> Path:
    return Path(settings.DATA_DIR)


def snapshots_root(*, create: bool = False) -> Path:
    root = data_dir() / SNAPSHOTS_DIRNAME
    if create:
        ensure_private_dir(root)
    return root


def snapshots_keep() -> int:
    """How many snapshots the store keeps (0 to 1000, checked when the settings load: chartr/config.py)."""
    return settings.CHARTR_SNAPSHOTS_KEEP


def is_snapshot_name(name: str) -> bool:
    return bool(NAME_PATTERN.match(name)) and name_to_datetime(name) is not None


def name_to_datetime(name: str) -> dt.datetime | None:
    try:
        stamp, millis = name.split(".")
        base = dt.datetime.strptime(stamp, _NAME_TIME_FORMAT).replace(tzinfo=dt.UTC)
        return base + dt.timedelta(milliseconds=int(millis))
    except ValueError:
        return None


def datetime_to_name(moment: dt.datetime) -> str:
    moment = moment.astimezone(dt.UTC)
    return f"{moment:{_NAME_TIME_FORMAT}}.{moment.microsecond // 1000:03d}"


def snapshot_names(root: Path | None = None) -> list[str]:
    """Every snapshot-named directory, oldest first (complete or not)."""
    root = root or snapshots_root()
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False) and is_snapshot_name(e.name))


def next_snapshot_name(root: Path, now: dt.datetime | None = None) -> str:
    """The current time as a name, bumped past the newest existing one so
    names always sort in creation order, even if the clock stepped back."""
    candidate = datetime_to_name(now or dt.datetime.now(dt.UTC))
    existing = snapshot_names(root)
    if existing and candidate <= existing[-1]:
        newest = name_to_datetime(existing[-1])
        candidate = datetime_to_name(newest + dt.timedelta(milliseconds=1))
    return candidate


class ManifestError(Exception):
    pass


def read_manifest(snapshot_dir: Path) -> dict[str, Any]:
    path = snapshot_dir / MANIFEST_NAME
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ManifestError(f"{path} is missing") from None
    except OSError as exc:
        raise ManifestError(f"{path} cannot be read: {exc.strerror}") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path} line {exc.lineno}: {exc.msg}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{path} is not a format-{MANIFEST_FORMAT} data snapshot manifest")
    for key, kind in (("engine", str), ("database", dict), ("files", dict)):
        if not isinstance(manifest.get(key), kind):
            raise ManifestError(f"{path} has no valid {key!r} entry")
    return manifest


def safe_relpath(rel: str) -> PurePosixPath:
    """A manifest path that stays inside its directory; anything else means tampering."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(part in ("", ".", "..") for part in path.parts) or "\0" in rel:
        raise ManifestError(f"unsafe path {rel!r} in manifest")
    return path


def hash_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def copy_hashing(source: Path, target: Path) -> tuple[str, int]:
    """Copy ``source`` to a new file ``target`` and hash what was copied, in one pass."""
    digest = hashlib.sha256()
    copied = 0
    with open(source, "rb") as src, open(target, "xb") as dst:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            dst.write(chunk)
            copied += len(chunk)
    return digest.hexdigest(), copied


def remove_tree(path: Path) -> None:
    """Delete a snapshot-like directory by first renaming it to a dot-name, so
    a crash half-way never leaves something that still looks complete."""
    if path.name.startswith("."):
        shutil.rmtree(path, ignore_errors=True)
        return
    trash = path.with_name(f".trash-{path.name}")
    os.rename(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def remove_leftovers(root: Path) -> None:
    """Work dirs of runs that crashed. Only call this while holding the store lock."""
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name.startswith(WORK_PREFIXES) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
