"""manage.py restore: list data snapshots, or restore one (undoably)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from datadir.selectors import list_data_snapshots
from datadir.services import restore_snapshot
from datadir.store import human_bytes
from kernel.errors import ChartrError


class Command(BaseCommand):
    help = (
        "Restore the database and data files from a data snapshot (the newest, or --from NAME). "
        "The current state is snapshotted first; restoring that snapshot undoes the restore."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--list", dest="list_only", action="store_true", help="List the data snapshots, newest first."
        )
        parser.add_argument(
            "--from", dest="name", metavar="NAME", help="Snapshot to restore, e.g. 20260719-104432.512."
        )
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="Fail at once instead of waiting when another snapshot or restore is running.",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Check the snapshot completely (hashes, integrity, row counts) and change nothing.",
        )

    def handle(self, *args, list_only: bool, name: str | None, no_wait: bool, dry_run: bool, **options):
        if list_only:
            if name or dry_run:
                raise CommandError("--list cannot be combined with --from or --dry-run.")
            self._list()
            return
        try:
            result = restore_snapshot(name=name, wait=not no_wait, dry_run=dry_run)
        except ChartrError as exc:
            raise CommandError(exc.message) from exc
        except OSError as exc:  # a full disk or a permission problem in the data dir
            raise CommandError(f"The restore failed: {exc.filename or 'the data dir'}: {exc.strerror or exc}") from exc
        if result.dry_run:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Data snapshot {result.restored} is complete and intact ({result.files_restored} files); "
                    "nothing was changed (dry run)."
                )
            )
            return
        self.stdout.write(f"Pre-restore snapshot: {result.undo_snapshot}")
        self.stdout.write(self.style.SUCCESS(f"Restored data snapshot {result.restored}."))
        self.stdout.write(
            f"  files: {result.files_restored} restored, {result.files_removed} removed; "
            f"new timeline epoch for {result.agents_with_new_epoch} agents (clients with old cursors get a reset)"
        )
        self.stdout.write(
            f"  to undo: manage.py restore --from {result.undo_snapshot}\n"
            "  if the snapshot predates the code's migrations, run manage.py migrate next."
        )

    def _list(self) -> None:
        snapshots = list_data_snapshots()
        if not snapshots:
            self.stdout.write("No data snapshots yet (manage.py snapshot takes one).")
            return
        for info in snapshots:
            if info.problem:
                self.stdout.write(f"{info.name}  INCOMPLETE: {info.problem}")
                continue
            label = info.reason + (f" ({info.note})" if info.note else "")
            self.stdout.write(
                f"{info.name}  {info.engine:<10}  {info.files:>5} files  "
                f"{human_bytes(info.size_bytes):>10} ({human_bytes(info.own_bytes)} own)  {label}\n"
                f"    holds {info.holds}\n    changes: {info.summary}"
            )
