"""manage.py import_instance FILE: load an export_instance file into this (empty) database."""

from __future__ import annotations

from django.core.management.base import CommandError

from kernel.commands import ProgressCommand
from portability.format import InstanceFileInvalid
from portability.services import TargetNotReady, import_instance


class Command(ProgressCommand):
    help = (
        "Load an export_instance FILE into this database, which must be empty (migrated, holding no project, "
        "workspace, agent or timeline row), in one transaction, then verify the counts and each agent's content "
        "hash. --dry-run does all of it and rolls back."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="an export_instance file (.jsonl, or .jsonl.gz)")
        parser.add_argument("--dry-run", action="store_true", help="import and verify, then roll back")

    def handle(self, *args, file: str, dry_run: bool, **options):
        try:
            result = import_instance(path=file, dry_run=dry_run, progress=self.progress())
        except (InstanceFileInvalid, TargetNotReady) as exc:
            raise CommandError(f"{exc} Nothing was imported.") from exc
        finally:
            self.end_progress()
        counts = ", ".join(f"{n} {kind}" for kind, n in result.counts.items())
        self.stdout.write(
            f"Imported from {file} (exported on {result.source_engine or 'an unknown engine'}): {counts}."
        )
        self.stdout.write(f"Verified: the counts, and the content hash of each of {result.agents_verified} agent(s).")
        if dry_run:
            self.stdout.write("Dry run: everything was rolled back; the database is unchanged.")
        else:
            self.stdout.write(self.style.SUCCESS("Done."))
