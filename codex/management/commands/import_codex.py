"""manage.py import_codex PATH: bring a Codex home's threads into chartr, or top them up."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from codex.report import CodexImportInvalid, CodexImportReport
from codex.services import import_codex
from kernel.errors import ChartrError


class Command(BaseCommand):
    help = (
        "Import Codex CLI threads from a $CODEX_HOME, its sessions/ directory or one rollout file, in one "
        "transaction: each thread becomes the agent of the same id, each rollout line one timeline row. "
        "Safe to run again: only lines added since the last run come over."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a Codex home ($CODEX_HOME, ~/.codex), its sessions/, or one rollout file")
        parser.add_argument("--dry-run", action="store_true", help="do the whole import, report, then roll back")

    def handle(self, *args, path: str, dry_run: bool, **options):
        progress = self._progress if self.stdout.isatty() else self._phase_line
        try:
            report = import_codex(source=path, dry_run=dry_run, progress=progress)
        except CodexImportInvalid as exc:
            self._end_progress()
            raise CommandError("\n".join([exc.message, *(f"  {problem}" for problem in exc.problems)])) from exc
        except ChartrError as exc:
            self._end_progress()
            raise CommandError(exc.message) from exc
        self._end_progress()
        self._print_report(report)

    _progress_shown = False
    _phases_seen: set[str] | None = None

    def _phase_line(self, phase: str, done: int, total: int) -> None:
        """Not a terminal (logs, CI): one line as each phase starts, no carriage returns."""
        if self._phases_seen is None:
            self._phases_seen = set()
        if phase not in self._phases_seen:
            self._phases_seen.add(phase)
            self.stdout.write(f"{phase}...")

    def _progress(self, phase: str, done: int, total: int) -> None:
        self._progress_shown = True
        self.stdout.write(f"\r{phase}: {done:,}/{total:,}\x1b[K", ending="")
        self.stdout.flush()

    def _end_progress(self) -> None:
        if self._progress_shown:
            self.stdout.write("\r\x1b[K", ending="")
            self._progress_shown = False

    def _print_report(self, report: CodexImportReport) -> None:
        out = self.stdout
        title = f"Codex import of {report.source}"
        out.write(f"{title} (dry run: everything rolled back)" if report.dry_run else title)
        threads, rows = report.threads, report.rows
        out.write(f"  threads:   {threads.created} created, {threads.updated} updated, {threads.unchanged} unchanged")
        out.write(f"  rows:      {rows.created} created, {rows.unchanged} unchanged")
        out.write(f"  archived:  {len(report.archived)}")
        if not report.changed_anything:
            out.write("Nothing to change.")
        self._section("Rows by thread", [f"{thread}: {line}" for thread, line in report.rows_by_thread.items()])
        self._section("Not read", report.unread)
        self._section("Warnings", report.warnings)
        if report.dry_run:
            out.write("Dry run: the database is unchanged.")
            return
        out.write(self.style.SUCCESS(f"Recorded as Codex import run {report.run_id}."))

    def _section(self, title: str, lines: list[str]) -> None:
        if lines:
            self.stdout.write(f"{title} ({len(lines)}):")
            for line in lines:
                self.stdout.write(f"  {line}")
