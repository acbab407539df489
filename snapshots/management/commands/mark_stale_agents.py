"""Close out agents whose daemon went silent: ``manage.py mark_stale_agents [--dry-run]``.

Safe to run from cron while the server runs; docs/operations.md shows how.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from snapshots.services import mark_stale_agents


class Command(BaseCommand):
    help = (
        "Set running or initializing agents silent for CHARTR_STALE_AFTER_SECONDS to lifecycle 'error', "
        "needing attention (reason 'error')."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="mark them, list them, then roll back")

    def handle(self, *args, dry_run: bool, **options):
        with transaction.atomic():
            agent_ids = mark_stale_agents()
            if dry_run:
                transaction.set_rollback(True)
        verb = "would mark" if dry_run else "marked"
        silent = settings.CHARTR_STALE_AFTER_SECONDS
        self.stdout.write(f"{verb} {len(agent_ids)} stale agent(s) (silent for more than {silent} s) as error")
        for agent_id in agent_ids:
            self.stdout.write(f"  {agent_id}")
