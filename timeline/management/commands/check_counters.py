"""``manage.py check_counters [--dry-run]``: verify the agents' row and byte counters against their rows."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from timeline.writes.counters import check_counters


class Command(BaseCommand):
    help = "Check every agent's timeline_rows and timeline_bytes against its committed rows, and repair them."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report the drift, repair nothing")

    def handle(self, *args, dry_run: bool, **options):
        drifts = check_counters(repair=not dry_run)
        for drift in drifts:
            (rows, size), (actual_rows, actual_size) = drift.stored, drift.actual
            self.stdout.write(
                f"  {drift.agent_id}: rows {rows} -> {actual_rows}, bytes {size} -> {actual_size}"
                + ("" if dry_run else " (repaired)")
            )
        if not drifts:
            self.stdout.write("All agent counters match their timelines.")
        elif dry_run:
            self.stdout.write(f"{len(drifts)} agent(s) with drifted counters; run without --dry-run to repair.")
        else:
            self.stdout.write(f"Repaired the counters of {len(drifts)} agent(s).")
