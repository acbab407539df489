"""Taking a data snapshot, and rotating old ones away. Runs under the store lock."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datadir import store
from datadir.backends import database_backend
from datadir.backends.base import DatabaseBackend
from datadir.errors import SnapshotFailed
from datadir.services.changes import changes, changes_text, summarize_changes
from datadir.services.files import Previous, snapshot_files
from datadir.services.marker import MARKER_KEY, change_marker, unchanged_since


@dataclass(frozen=True)
class SnapshotResult:
    name: str
    path: Path
    engine: str
    previous: str | None
    tables: dict[str, int]
    files: int
    linked_files: int
    copied_bytes: int
    summary: str
    rotated: tuple[str, ...] = ()


def take_locked(
    *, reason: str, note: str, protect: frozenset[str] = frozenset(), if_changed: bool = False
) -> SnapshotResult | None:
    """Take a snapshot, then rotate; the caller holds the store lock and has refused a
    CHARTR_SNAPSHOTS_KEEP of 0 (``take_snapshot``, ``restore_snapshot``).
    Snapshots named in ``protect`` are never rotated away. With ``if_changed``,
    nothing is taken (and None returned) when the newest snapshot's change
    marker matches the live data."""
    backend = database_backend()
    root = store.snapshots_root(create=True)
    previous = _newest_complete(root)
    marker = change_marker(backend)
    if if_changed and previous is not None and unchanged_since(previous[1], marker):
        return None
    name = store.next_snapshot_name(root)
    created = dt.datetime.now(dt.UTC)
    work = root / f".tmp-{name}-{secrets.token_hex(4)}"
    work.mkdir(mode=0o700)
    try:
        manifest, linked_files, copied_bytes = _write_snapshot(
            work,
            name=name,
            created=created,
            reason=reason,
            note=note,
            backend=backend,
            previous=previous,
            marker=marker,
        )
        os.rename(work, root / name)
        _fsync_dir(root)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise SnapshotFailed(f"Could not write data snapshot {name} into {root}: {exc}") from exc
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    rotated = _rotate(root, store.snapshots_keep(), set(protect) | {name})
    return SnapshotResult(
        name=name,
        path=root / name,
        engine=backend.engine,
        previous=previous[0] if previous else None,
        tables=manifest["database"]["tables"],
        files=len(manifest["files"]),
        linked_files=linked_files,
        copied_bytes=copied_bytes,
        summary=manifest["summary"],
        rotated=rotated,
    )


def _write_snapshot(
    work: Path,
    *,
    name: str,
    created: dt.datetime,
    reason: str,
    note: str,
    backend: DatabaseBackend,
    previous: Previous | None,
    marker: dict[str, Any],
) -> tuple[dict[str, Any], int, int]:
    """Fill ``work`` with the database dump, the files, changes.txt and, last, the manifest;
    the manifest, how many files were hard-linked and the bytes copied."""
    (work / store.DB_DIRNAME).mkdir()
    db_rel = f"{store.DB_DIRNAME}/{backend.dump_name}"
    db_path = work / db_rel
    contents = backend.dump(db_path)
    tables = contents.tables
    with open(db_path, "rb+") as handle:
        os.fsync(handle.fileno())
    files, linked, copied_bytes = snapshot_files(store.data_dir(), work / store.FILES_DIRNAME, previous, backend)
    snapshot_changes = changes(previous, files, tables, contents.records)
    manifest = {
        "format": store.MANIFEST_FORMAT,
        "name": name,
        "created": created.isoformat(timespec="milliseconds"),
        "reason": reason,
        "note": note,
        "engine": backend.engine,
        "database": {
            "file": db_rel,
            "size": db_path.stat().st_size,
            "sha256": store.hash_file(db_path),
            "tables": tables,
        },
        "files": files,
        "records": contents.records,
        "changes": snapshot_changes,
        "summary": summarize_changes(snapshot_changes),
        MARKER_KEY: marker,
    }
    _write_synced(work / store.CHANGES_NAME, changes_text(name, manifest))
    # The manifest is written last: a directory without one is never a snapshot.
    _write_synced(work / store.MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    _fsync_dir(work)
    return manifest, linked, copied_bytes


def newest_complete_name() -> str | None:
    """The newest snapshot with a readable manifest, the one ``if_changed`` compares with."""
    newest = _newest_complete(store.snapshots_root())
    return newest[0] if newest else None


def _newest_complete(root: Path) -> Previous | None:
    for name in reversed(store.snapshot_names(root)):
        try:
            return name, store.read_manifest(root / name)
        except store.ManifestError:
            continue
    return None


def _write_synced(path: Path, text: str) -> None:
    with open(path, "x") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rotate(root: Path, keep: int, protect: set[str]) -> tuple[str, ...]:
    names = store.snapshot_names(root)
    excess = names[: max(len(names) - keep, 0)]
    removed = []
    for name in excess:
        if name in protect:
            continue
        store.remove_tree(root / name)
        removed.append(name)
    return tuple(removed)
