"""manage.py import_codex PATH: bring a Codex home's threads into chartr, or top them up."""

from __future__ import annotations

from codex.report import CodexImportReport
from codex.services import import_codex
from kernel.commands import ProgressCommand, require_migrated


class Command(ProgressCommand):
    help = (
        "Import Codex CLI threads from a $CODEX_HOME, its sessions/ directory or one rollout file, in one "
        "transaction: each thread becomes the agent of the same id, each rollout line one timeline row. "
        "Safe to run again: only lines added since the last run come over."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a Codex home ($CODEX_HOME, ~/.codex), its sessions/, or one rollout file")
        parser.add_argument("--dry-run", action="store_true", help="do the whole import, report, then roll back")

    def handle(self, *args, path: str, dry_run: bool, **options):
        require_migrated()
        self._print_report(self.run_service(import_codex, source=path, dry_run=dry_run))

    def _print_report(self, report: CodexImportReport) -> None:
        out = self.stdout
        self.import_title(f"Codex import of {report.source}", report)
        threads, rows = report.threads, report.rows
        out.write(f"  threads:   {threads.created} created, {threads.updated} updated, {threads.unchanged} unchanged")
        out.write(f"  rows:      {rows.created} created, {rows.unchanged} unchanged")
        out.write(f"  archived:  {len(report.archived)}")
        if not report.changed_anything:
            out.write("Nothing to change.")
        self.section("Rows by thread", [f"{thread}: {line}" for thread, line in report.rows_by_thread.items()])
        self.section("Not read", report.unread)
        self.section("Warnings", report.warnings)
        self.import_ending(report, f"Recorded as Codex import run {report.run_id}.")
