"""manage.py import_legacy_json PATH: bring a legacy home directory into chartr."""

from __future__ import annotations

from django.core.management.base import CommandError

from kernel.commands import ProgressCommand
from legacy.problems import LegacyImportInvalid
from legacy.report import KINDS, ImportReport
from legacy.services import import_legacy

LABELS = {"projects": "projects", "workspaces": "workspaces", "agents": "agents", "timeline_rows": "timeline rows"}


class Command(ProgressCommand):
    help = (
        "Import a legacy (Paseo) home directory (projects/projects.json, projects/workspaces.json, agents/, "
        "agent-timelines/, timelines.db, timelines/) in one transaction. Safe to run again: records already "
        "imported are left alone."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the legacy home directory")
        parser.add_argument(
            "--skip-invalid", action="store_true", help="import the valid records and list the invalid ones"
        )
        parser.add_argument("--dry-run", action="store_true", help="do the whole import, report, then roll back")

    def handle(self, *args, path: str, skip_invalid: bool, dry_run: bool, **options):
        try:
            report = self.run_service(import_legacy, source=path, skip_invalid=skip_invalid, dry_run=dry_run)
        except CommandError as exc:
            refusal = exc.__cause__
            if isinstance(refusal, LegacyImportInvalid) and refusal.skippable and not skip_invalid:
                raise CommandError(f"{exc}\nFix these, or run with --skip-invalid to import the rest.") from refusal
            raise
        self._print_report(report)

    def _print_report(self, report: ImportReport) -> None:
        out = self.stdout
        self.import_title(f"Import of {report.source}", report)
        for kind in KINDS:
            counts = report.counts[kind]
            out.write(
                f"  {LABELS[kind] + ':':15}{counts.created} created, {counts.updated} updated, "
                f"{counts.unchanged} unchanged, {counts.skipped} skipped"
            )
        created, updated, unchanged = (report.total(c) for c in ("created", "updated", "unchanged"))
        if report.changed_anything:
            out.write(f"Total: {created} created, {updated} updated, {unchanged} unchanged.")
        else:
            out.write(f"Nothing to change: 0 created, {unchanged} unchanged.")
        if report.skipped:
            out.write(f"Skipped {len(report.skipped)} invalid file(s) or record(s):")
            for line in report.skipped:
                out.write(f"  {line}")
        self.section("History files skipped", report.skipped_files)
        self.section("Timeline rows by agent", [f"{agent}: {line}" for agent, line in report.rows_by_agent.items()])
        self.section("Holes in imported histories (rows keep their own seqs)", report.holes)
        self.section("Items stored as legacy_item", report.normalised_items)
        self.section(
            "Keys kept in extra (records or rows with each)",
            [f"{kind}: {key} {count}" for kind, keys in report.extra_keys.items() for key, count in keys.items()],
        )
        self.section("Live agents archived with their archived workspace", report.archived_with_workspace)
        self.section("Entries of the home not read", report.unread)
        self.section("Warnings", report.warnings)
        if not report.dry_run:
            if report.backup_path:
                out.write(f"Input backed up to {report.backup_path}")
            else:
                out.write("Nothing changed, so no backup was made.")
        self.import_ending(
            report,
            f"Recorded as import run {report.import_run_id}.",
            dry_run="Dry run: the database is unchanged and no backup was made.",
        )
