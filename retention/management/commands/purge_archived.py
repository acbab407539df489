"""``manage.py purge_archived --older-than DAYS [--dry-run]``: hard-delete long-archived records."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from kernel.errors import ChartrError
from retention.selectors import purge_preview
from retention.services import older_than_cutoff, purge_archived


class Command(BaseCommand):
    help = (
        "Hard-delete projects, workspaces and agents archived more than DAYS ago, with their timelines. "
        "A 'pre-purge' data snapshot is taken first, so `restore` undoes it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=int,
            metavar="DAYS",
            help="archived more than DAYS ago (0: everything archived so far); "
            "defaults to CHARTR_RETENTION_ARCHIVED_DAYS",
        )
        # Not "run then roll back" as elsewhere: the real purge commits batch by batch
        # so the API never waits long, and one rolled-back transaction around it all
        # would hold SQLite's write lock for the whole run.
        parser.add_argument("--dry-run", action="store_true", help="count what would go; delete and snapshot nothing")

    def handle(self, *args, older_than: int | None, dry_run: bool, **options):
        days = older_than if older_than is not None else settings.CHARTR_RETENTION_ARCHIVED_DAYS
        if days is None:
            raise CommandError("Give --older-than DAYS, or set CHARTR_RETENTION_ARCHIVED_DAYS.")
        if days < 0:
            raise CommandError(f"--older-than must be 0 or more days, not {days}.")
        cutoff = older_than_cutoff(older_than_days=days)
        if dry_run:
            self.stdout.write(f"Would purge what was archived before {cutoff:%Y-%m-%d %H:%M:%S %Z} (dry run):")
            for line in purge_preview(archived_before=cutoff).lines():
                self.stdout.write(f"  {line}")
            return
        try:
            result = purge_archived(archived_before=cutoff)
        except ChartrError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Purged what was archived before {cutoff:%Y-%m-%d %H:%M:%S %Z}:")
        for line in result.counts.lines():
            self.stdout.write(f"  {line}")
        self.stdout.write(f"Undo with: manage.py restore --from {result.snapshot}")
