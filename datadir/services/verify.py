"""Checking a snapshot completely before a restore touches anything.

Manifest, every file's size and sha256, then the database dump's content
through the engine's backend. A bad snapshot raises SnapshotCorrupt (or
SnapshotNotFound, EngineMismatch) and nothing live has changed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datadir import store
from datadir.backends import database_backend
from datadir.backends.base import CheckedDump, DatabaseBackend, DumpRejected
from datadir.errors import EngineMismatch, SnapshotCorrupt, SnapshotNotFound


@dataclass(frozen=True)
class VerifiedSnapshot:
    name: str
    path: Path
    manifest: dict[str, Any]
    backend: DatabaseBackend
    database: CheckedDump


def verify_snapshot(name: str, root: Path, work: Path) -> VerifiedSnapshot:
    """Check snapshot ``name`` in ``root``, using the private directory ``work``."""
    path = _existing_snapshot(name, root)
    manifest, db_path, file_paths = _read_manifest(name, path)
    backend = database_backend()
    if manifest["engine"] != backend.engine:
        raise EngineMismatch(
            f"Data snapshot {name} holds a {manifest['engine']} database but this server runs on {backend.engine}; "
            "nothing was changed."
        )
    database = manifest["database"]
    in_order = [(db_path, database), *((path, manifest["files"][rel]) for rel, path in file_paths.items())]
    problems = (_check_file(path, entry.get("size"), entry.get("sha256")) for path, entry in in_order)
    problem = next(filter(None, problems), None)
    if problem:
        raise _corrupt(name, problem)
    try:
        checked = backend.verify(
            db_path, sha256=database.get("sha256"), expected_tables=database.get("tables") or {}, work=work
        )
    except DumpRejected as exc:
        raise _corrupt(name, str(exc)) from None
    return VerifiedSnapshot(name=name, path=path, manifest=manifest, backend=backend, database=checked)


def _existing_snapshot(name: str, root: Path) -> Path:
    path = root / name
    if not store.is_snapshot_name(name) or not path.is_dir():
        known = store.snapshot_names(root)
        hint = f" Known snapshots: {', '.join(known[-5:])}." if known else " There are no data snapshots yet."
        raise SnapshotNotFound(f"There is no data snapshot named {name!r} in {root}.{hint}")
    return path


def _read_manifest(name: str, path: Path) -> tuple[dict[str, Any], Path, dict[str, Path]]:
    """The manifest, the database dump's path and every data file's path in the snapshot."""
    try:
        manifest = store.read_manifest(path)
        db_path = path / store.safe_relpath(str(manifest["database"].get("file", "")))
        file_paths = {rel: path / store.FILES_DIRNAME / store.safe_relpath(rel) for rel in manifest["files"]}
        # Everything the restore reads later is checked now, before anything changes.
        if not all(
            isinstance(entry, dict)
            and isinstance(entry.get("mtime_ns"), int)
            and isinstance(entry.get("mode", 0o600), int)
            for entry in manifest["files"].values()
        ):
            raise store.ManifestError(f"{path / store.MANIFEST_NAME} has a malformed file entry")
    except store.ManifestError as exc:
        raise _corrupt(name, str(exc)) from None
    return manifest, db_path, file_paths


def _corrupt(name: str, reason: str) -> SnapshotCorrupt:
    return SnapshotCorrupt(
        f"Data snapshot {name} is missing parts or corrupt, so it was not restored and nothing was changed: {reason}"
    )


def _check_file(path: Path, size: Any, digest: Any) -> str | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} is missing"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_size != size:
        return f"{path} has {st.st_size} bytes, the manifest says {size}"
    if store.hash_file(path) != digest:
        return f"{path} does not match its sha256 in the manifest"
    return None
