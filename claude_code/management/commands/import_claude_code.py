"""manage.py import_claude_code PATH: bring Claude Code transcripts into chartr."""

from __future__ import annotations

from claude_code.home_import import HomeImportReport, import_home
from kernel.commands import ProgressCommand, require_migrated


class Command(ProgressCommand):
    help = (
        "Import Claude Code transcripts: a Claude config home ($CLAUDE_CONFIG_DIR), its projects directory, "
        "one project directory or one session file, in one transaction. Safe to run again: only lines "
        "added to a file since the last run are imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a Claude config home, projects directory, project directory or session file")
        parser.add_argument("--dry-run", action="store_true", help="do the whole import, report, then roll back")

    def handle(self, *args, path: str, dry_run: bool, **options):
        require_migrated()
        self._print_report(self.run_service(import_home, source=path, dry_run=dry_run))

    def _print_report(self, report: HomeImportReport) -> None:
        out = self.stdout
        self.import_title(f"Import of {report.source}", report)
        out.write(
            f"  transcripts: {report.transcripts}: {report.sessions_created} new, {report.sessions_topped_up} topped up, "
            f"{report.sessions_unchanged} unchanged"
        )
        out.write(f"  lines imported: {report.lines_imported}; titles set: {report.titles_set}")
        if not report.changed_anything:
            out.write("Nothing to change.")
        self.section("Warnings", report.warnings)
        self.section("Not read", report.side_files)
        self.import_ending(report, f"Recorded as Claude Code import run {report.import_run_id}.")
