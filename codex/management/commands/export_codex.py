"""manage.py export_codex --out DIR: every imported Codex thread back as rollout files."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from codex.services import export_codex
from kernel.errors import ChartrError


class Command(BaseCommand):
    help = (
        "Write every imported Codex thread back under DIR as Codex wrote it: each rollout (sealed segments "
        "too) at its path relative to the Codex home, each line the record that came in."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="an empty or new directory, laid out as a $CODEX_HOME")

    def handle(self, *args, out: str, **options):
        tty = self.stdout.isatty()

        def progress(phase: str, done: int, total: int) -> None:
            if tty:
                self.stdout.write(f"\r{phase}: {done:,}/{total:,}\x1b[K", ending="")
                self.stdout.flush()

        try:
            report = export_codex(out=out, progress=progress)
        except ChartrError as exc:
            raise CommandError(exc.message) from exc
        if tty:
            self.stdout.write("\r\x1b[K", ending="")
        self.stdout.write(f"Wrote {report.threads} threads: {report.files} rollout files, {report.lines} lines.")
        if report.skipped:
            self.stdout.write(f"Not written ({len(report.skipped)}):")
            for line in report.skipped:
                self.stdout.write(f"  {line}")
        self.stdout.write(self.style.SUCCESS(f"Codex home written to {report.out}"))
