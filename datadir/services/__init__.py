"""Taking, rotating and restoring data snapshots. The commands and the admin page call these.

A snapshot and a restore each run under the store lock (datadir.lock),
so they never interleave. Neither goes through the ORM for the bulk of its
work: the database is copied whole (SQLite online backup API, or pg_dump),
which is what makes the copy consistent while the server keeps writing.

How it is built: one module per phase (take.py, verify.py, restore.py, with
files.py for the data files and changes.py for the change list), written once
against datadir.backends.base.DatabaseBackend; each database engine implements
that interface in one class (datadir/backends/sqlite.py, postgresql.py).
"""

from __future__ import annotations

from datadir import store
from datadir.backends import database_backend
from datadir.errors import SnapshotsDisabled
from datadir.lock import store_lock
from datadir.services.restore import RestoreResult, all_agent_ids, restore_locked
from datadir.services.take import SnapshotResult, newest_complete_name, take_locked
from snapshots.models import AgentSnapshot
from snapshots.signals import agents_changed


def take_snapshot(
    *, wait: bool = True, reason: str = "manual", note: str = "", if_changed: bool = False
) -> SnapshotResult | None:
    """Snapshot the database and the data dir's files into ``<data dir>/snapshots/<name>/``,
    then drop the oldest snapshots beyond CHARTR_SNAPSHOTS_KEEP.

    With ``if_changed``, returns None without taking anything when nothing has
    changed since the newest snapshot (datadir.services.marker says how that is told).

    Raises SnapshotsDisabled when CHARTR_SNAPSHOTS_KEEP is 0, StoreBusy when
    ``wait`` is false and another snapshot or restore is running.
    """
    if store.snapshots_keep() == 0:
        raise SnapshotsDisabled("Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0); nothing was done.")
    with store_lock(wait=wait), database_backend().store_locked(wait=wait):
        store.remove_leftovers(store.snapshots_root(create=True))
        return take_locked(reason=reason, note=note, if_changed=if_changed)


def take_snapshot_before_write(reason: str, note: str, reuse_unchanged: bool, required: bool) -> str | None:
    """kernel.data_snapshots' taker: a snapshot before a destructive write (see ``take_data_snapshot``)."""
    if store.snapshots_keep() == 0:
        if not required:
            return None
        raise SnapshotsDisabled(
            f"Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0), so a {reason} snapshot cannot be taken and "
            "this could not be undone; set CHARTR_SNAPSHOTS_KEEP to 1 or more. Nothing was changed."
        )
    result = take_snapshot(reason=reason, note=note, if_changed=reuse_unchanged)
    if result is None:  # unchanged since the newest snapshot, which holds this very state
        return newest_complete_name()
    return result.name


def restore_snapshot(*, name: str | None = None, wait: bool = True, dry_run: bool = False) -> RestoreResult:
    """Replace the database and data files with snapshot ``name`` (default: the newest).

    The snapshot is checked completely first (manifest, hashes, SQLite
    integrity and row counts, or ``pg_restore --list``); a bad one raises
    SnapshotCorrupt and nothing changes. Then the current state is snapshotted
    (its name is in the result, and restoring it undoes this restore), the
    database is replaced atomically, and every agent's timeline_epoch gets a
    new random value in the same step, so stale cursors get ``reset``.
    ``dry_run`` does all the checks and stops there.
    """
    if not dry_run and store.snapshots_keep() == 0:
        raise SnapshotsDisabled(
            "Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0), so this restore could not be undone; "
            "set CHARTR_SNAPSHOTS_KEEP to 1 or more to restore. Nothing was changed."
        )
    with store_lock(wait=wait), database_backend().store_locked(wait=wait):
        result = restore_locked(name=name, dry_run=dry_run)
    if result.agents_with_new_epoch:
        agents_changed.send(sender=AgentSnapshot, agent_ids=all_agent_ids(), reason="restore")
    return result
