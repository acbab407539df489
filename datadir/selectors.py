"""Reading the list of data snapshots (for the restore command and the admin page)."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.utils.text import capfirst

from datadir import store
from datadir.backends import database_backend
from datadir.errors import SnapshotNotFound
from datadir.records import RecordChange, holdings, read_records, record_changes


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
    #: Its projects, workspaces and agents (datadir.records); None for a snapshot taken before they were kept.
    records: dict[str, dict[str, list]] | None = None
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

    @property
    def holds(self) -> str:
        """What it holds in the operator's words ("2 projects, ..., 120 timeline rows")."""
        return holdings(self.records) if self.records is not None else f"{self.rows:,} rows in all tables"


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
    found = {"name": name, "path": path, "size_bytes": size, "own_bytes": own}
    try:
        manifest: dict[str, Any] = store.read_manifest(path)
    except store.ManifestError as exc:
        return DataSnapshotInfo(**found, created=store.name_to_datetime(name), problem=str(exc))
    try:
        created = dt.datetime.fromisoformat(manifest.get("created", ""))
    except (TypeError, ValueError):
        created = store.name_to_datetime(name)
    return DataSnapshotInfo(
        **found,
        created=created,
        reason=str(manifest.get("reason", "")),
        note=str(manifest.get("note", "")),
        engine=manifest["engine"],
        summary=str(manifest.get("summary", "")),
        tables=dict(manifest["database"].get("tables") or {}),
        records=manifest.get("records") if isinstance(manifest.get("records"), dict) else None,
        files=len(manifest["files"]),
    )


def list_data_snapshots(*, with_sizes: bool = True) -> list[DataSnapshotInfo]:
    """Every snapshot directory, newest first; incomplete ones carry a ``problem``."""
    root = store.snapshots_root()
    return [_info(root, name, with_sizes=with_sizes) for name in reversed(store.snapshot_names(root))]


@dataclass(frozen=True)
class CountLine:
    """One line of a restore preview: what the snapshot holds against now, in the admin's words."""

    label: str
    in_snapshot: int | None
    now: int | None

    @property
    def changes(self) -> bool:
        return self.in_snapshot != self.now


@dataclass(frozen=True)
class RestorePreview:
    snapshot: DataSnapshotInfo
    lines: list[CountLine]
    #: Snapshots that taking the undo snapshot rotates away (CHARTR_SNAPSHOTS_KEEP), oldest first.
    rotated: list[str]
    #: Why the restore would be refused ("" when it can go ahead).
    problem: str = ""
    #: Migrations applied now that the snapshot lacks (run ``manage.py migrate`` after restoring).
    migrations_behind: int = 0
    #: What the restore does to each project, workspace and agent (now -> the snapshot); None when
    #: the snapshot was taken before snapshots kept their records (counts only then).
    records: list[RecordChange] | None = None

    def _records(self, change: str, kind: str | None = None) -> list[RecordChange]:
        return [item for item in self.records or [] if item.change == change and kind in (None, item.kind)]

    @property
    def unarchived(self) -> list[RecordChange]:
        """Archived now, live in the snapshot: the restore unarchives them."""
        return self._records("unarchived")

    @property
    def archived_again(self) -> list[RecordChange]:
        return self._records("archived")

    @property
    def disappearing(self) -> list[RecordChange]:
        """Created since the snapshot: the restore deletes them (agents with their timelines)."""
        return self._records("removed")

    @property
    def returning(self) -> list[RecordChange]:
        """Deleted since the snapshot: the restore brings them back."""
        return self._records("added")

    @property
    def timelines(self) -> list[RecordChange]:
        """Agents in both whose timelines differ in rows: now -> after the restore."""
        return self._records("rows", "agents")

    @property
    def changing(self) -> list[CountLine]:
        return [line for line in self.lines if line.changes]

    @property
    def unchanged(self) -> list[CountLine]:
        return [line for line in self.lines if not line.changes]


#: Tables no model stands for, in the admin's words.
_UNMODELLED = {"django_migrations": "Applied migrations"}
_OTHER = "Other records"


def _is_ours(path: Path) -> bool:
    """An app of this project, not an installed package (a virtualenv may live inside the project)."""
    return path.is_relative_to(settings.BASE_DIR) and "site-packages" not in path.parts


def _table_labels() -> dict[str, str]:
    """Table name -> the admin's plural name for what it holds ("Projects", "Timeline rows")."""
    labels = {}
    models = apps.get_models(include_auto_created=True)
    # chartr's own records first (projects, agents, timelines), then the framework's (users, sessions).
    ours = [model for model in models if _is_ours(Path(model._meta.app_config.path))]
    for model in [*ours, *(model for model in models if model not in ours)]:
        opts = model._meta
        labels.setdefault(opts.db_table, capfirst(str(opts.verbose_name_plural)))
    return {**labels, **_UNMODELLED}


def _labelled(tables: dict[str, int], labels: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for table, rows in tables.items():
        label = labels.get(table, _OTHER)
        counts[label] = counts.get(label, 0) + rows
    return counts


def _rotated_by_undo(name: str) -> list[str]:
    """What ``take_locked`` rotates away when it adds the undo snapshot, protecting ``name``."""
    names = store.snapshot_names()
    excess = len(names) + 1 - store.snapshots_keep()
    return [old for old in names[: max(excess, 0)] if old != name]


def restore_preview(name: str) -> RestorePreview:
    """What restoring snapshot ``name`` changes, from its manifest and today's row counts (no dump is read).

    Raises SnapshotNotFound when there is no snapshot of that name."""
    if not store.is_snapshot_name(name) or name not in store.snapshot_names():
        raise SnapshotNotFound(f"There is no data snapshot {name!r} in {store.snapshots_root()}.")
    info = _info(store.snapshots_root(), name, with_sizes=False)
    labels = _table_labels()
    backend = database_backend()
    with backend.connection.cursor() as cursor:
        live = backend.count_rows(cursor)
        records = None if info.records is None else record_changes(read_records(cursor), info.records)
    before, now = _labelled(info.tables, labels), _labelled(live, labels)
    order = {label: index for index, label in enumerate(dict.fromkeys(labels.values()))}
    lines = [
        CountLine(label=label, in_snapshot=before.get(label), now=now.get(label))
        for label in sorted(set(before) | set(now), key=lambda label: (order.get(label, len(order)), label))
    ]
    problem = info.problem and f"It is incomplete and cannot be restored: {info.problem}"
    if not problem and store.snapshots_keep() == 0:
        problem = "Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0), so a restore could not be undone."
    if not problem and info.engine != backend.engine:
        problem = f"It was taken on {info.engine} and this server runs on {backend.engine}: it cannot be restored here."
    behind = max(live.get("django_migrations", 0) - info.tables.get("django_migrations", 0), 0) if info.tables else 0
    return RestorePreview(
        snapshot=info,
        lines=lines,
        rotated=_rotated_by_undo(name),
        problem=problem,
        migrations_behind=behind,
        records=records,
    )
