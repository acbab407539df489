"""manage.py snapshot: take a data snapshot into <data dir>/snapshots/."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from datadir.errors import SnapshotsDisabled
from datadir.services import take_snapshot
from datadir.store import human_bytes, snapshots_keep
from kernel.errors import ChartrError


class Command(BaseCommand):
    help = (
        "Take a consistent data snapshot (database + data files) into <data dir>/snapshots/ and keep "
        "the newest CHARTR_SNAPSHOTS_KEEP of them."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="Fail at once instead of waiting when another snapshot or restore is running.",
        )

        parser.add_argument(
            "--if-changed",
            action="store_true",
            help="Take one only if data changed since the newest snapshot; print 'unchanged' otherwise "
            "(for an hourly timer).",
        )

    def handle(self, *args, no_wait: bool = False, if_changed: bool = False, **options):
        try:
            result = take_snapshot(
                wait=not no_wait, reason="scheduled" if if_changed else "manual", if_changed=if_changed
            )
        except SnapshotsDisabled as exc:
            self.stdout.write(exc.message)
            return
        except ChartrError as exc:
            raise CommandError(exc.message) from exc
        except OSError as exc:  # a full disk or a permission problem in the data dir
            raise CommandError(
                f"The data snapshot failed: {exc.filename or 'the data dir'}: {exc.strerror or exc}"
            ) from exc
        if result is None:
            self.stdout.write("unchanged: no data changed since the newest snapshot; none taken")
            return
        self.stdout.write(self.style.SUCCESS(f"Data snapshot {result.name} taken in {result.path}"))
        rows = sum(result.tables.values())
        self.stdout.write(f"  database: {result.engine}, {len(result.tables)} tables, {rows} rows")
        self.stdout.write(
            f"  files: {result.files} ({result.linked_files} hard-linked to the previous snapshot, "
            f"{result.files - result.linked_files} copied, {human_bytes(result.copied_bytes)})"
        )
        self.stdout.write(f"  changes: {result.summary}")
        kept = f"  kept the newest {snapshots_keep()}"
        self.stdout.write(kept + (f"; removed {', '.join(result.rotated)}" if result.rotated else ""))
