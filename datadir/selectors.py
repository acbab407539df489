"""Reading the list of data snapshots (for the restore command and the admin page)."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datadir import store


@dataclass(frozen=True)
class DataSnapshotInfo:
    name: str
    path: Path
    created: dt.datetime | None
    #: Empty when the snapshot is complete; otherwise why it cannot be restored.
    problem: str = ""
    reason: str = ""
    note: str = ""
    engine: str = ""
    summary: str = ""
    tables: dict[str, int] = field(default_factory=dict)
    files: int = 0
    #: Apparent size of everything in it.
    size_bytes: int = 0
    #: Bytes only this snapshot holds (files not hard-linked with another one).
    own_bytes: int = 0

    @property
    def complete(self) -> bool:
        return not self.problem

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


def _sizes(path: Path) -> tuple[int, int]:
    total = own = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            total += st.st_size
            if st.st_nlink == 1:
                own += st.st_size
    return total, own


def _info(root: Path, name: str, *, with_sizes: bool) -> DataSnapshotInfo:
    path = root / name
    size, own = _sizes(path) if with_sizes else (0, 0)
    try:
        manifest: dict[str, Any] = store.read_manifest(path)
    except store.ManifestError as exc:
        return DataSnapshotInfo(
            name=name,
            path=path,
            created=store.name_to_datetime(name),
            problem=str(exc),
            size_bytes=size,
            own_bytes=own,
        )
    try:
        created = dt.datetime.fromisoformat(manifest.get("created", ""))
    except (TypeError, ValueError):
        created = store.name_to_datetime(name)
    return DataSnapshotInfo(
        name=name,
        path=path,
        created=created,
        reason=str(manifest.get("reason", "")),
        note=str(manifest.get("note", "")),
        engine=manifest["engine"],
        summary=str(manifest.get("summary", "")),
        tables=dict(manifest["database"].get("tables") or {}),
        files=len(manifest["files"]),
        size_bytes=size,
        own_bytes=own,
    )


def list_data_snapshots(*, with_sizes: bool = True) -> list[DataSnapshotInfo]:
    """Every snapshot directory, newest first; incomplete ones carry a ``problem``."""
    root = store.snapshots_root()
    return [_info(root, name, with_sizes=with_sizes) for name in reversed(store.snapshot_names(root))]
