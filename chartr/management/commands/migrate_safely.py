"""`migrate`, serialised across every process that starts at the same time."""

from __future__ import annotations

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import DEFAULT_DB_ALIAS

from chartr.migration_lock import migration_lock


class Command(BaseCommand):
    help = "Apply migrations under a lock, so several workers or replicas can start at once."

    def add_arguments(self, parser):
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args, database: str, verbosity: int, **options):
        def on_wait() -> None:
            self.stdout.write("Another process is applying migrations; waiting for it to finish.")
            self.stdout.flush()

        with migration_lock(database, on_wait=on_wait):
            call_command("migrate", database=database, interactive=False, verbosity=verbosity, stdout=self.stdout)
