"""Restoring a data snapshot: verify, snapshot the current state, stage the
files, swap the database, put the files in place. Runs under the store lock."""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections

from datadir import store
from datadir.backends.base import quote_name
from datadir.errors import SnapshotFailed, SnapshotNotFound
from datadir.services.files import Staged, discard_staged, put_staged_files, stage_files
from datadir.services.take import SnapshotResult, take_locked
from datadir.services.verify import VerifiedSnapshot, verify_snapshot
from snapshots.models import AgentSnapshot


@dataclass(frozen=True)
class RestoreResult:
    restored: str
    undo_snapshot: str | None
    agents_with_new_epoch: int
    files_restored: int
    files_removed: int
    dry_run: bool = False


def restore_locked(*, name: str | None, dry_run: bool) -> RestoreResult:
    """Restore ``name`` (default: the newest); the caller holds the store lock."""
    root = store.snapshots_root(create=True)
    store.remove_leftovers(root)
    if name is None:
        names = store.snapshot_names(root)
        if not names:
            raise SnapshotNotFound(f"There are no data snapshots in {root}; nothing was changed.")
        name = names[-1]
    work = root / f".restore-{secrets.token_hex(4)}"
    work.mkdir(mode=0o700)
    try:
        verified = verify_snapshot(name, root, work)
        if dry_run:
            return RestoreResult(
                restored=name,
                undo_snapshot=None,
                agents_with_new_epoch=0,
                files_restored=len(verified.manifest["files"]),
                files_removed=0,
                dry_run=True,
            )
        return _replace_live_state(verified)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replace_live_state(verified: VerifiedSnapshot) -> RestoreResult:
    """Snapshot the current state (the undo), then put ``verified`` in its place.

    Writes are held back from the start of the undo snapshot until the
    restored database is in place: a write committed in between would be in
    neither state."""
    name = verified.name
    with verified.backend.writes_held_back():
        undo = take_locked(reason="pre-restore", note=f"state before restoring {name}", protect=frozenset({name}))
        staged = _stage_files(verified, undo)
        data_dir = store.data_dir()
        try:
            agents = verified.backend.restore(verified.database)
            files_restored, files_removed = put_staged_files(staged, data_dir, verified.backend)
        except SnapshotFailed as exc:
            discard_staged(staged)
            raise SnapshotFailed(f"{exc.message} The pre-restore snapshot is {undo.name}.") from exc
        except Exception as exc:
            discard_staged(staged)
            raise SnapshotFailed(
                f"Restoring {name} failed part-way ({exc}); restore {undo.name} to return to the state before."
            ) from exc
    return RestoreResult(
        restored=name,
        undo_snapshot=undo.name,
        agents_with_new_epoch=agents,
        files_restored=files_restored,
        files_removed=files_removed,
    )


def _stage_files(verified: VerifiedSnapshot, undo: SnapshotResult) -> Staged:
    """Files are staged before the database is swapped, so a full disk changes nothing."""
    try:
        return stage_files(verified.path, verified.manifest, store.data_dir())
    except OSError as exc:
        raise SnapshotFailed(
            f"Could not copy the data files of {verified.name} back ({exc}); the database and data files "
            f"were not changed (the pre-restore snapshot {undo.name} was taken)."
        ) from exc


def all_agent_ids() -> list[str]:
    # Raw SQL: the restored tables may predate the code's migrations.
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(f"SELECT agent_id FROM {quote_name(AgentSnapshot._meta.db_table)}")
        return [row[0] for row in cursor.fetchall()]
