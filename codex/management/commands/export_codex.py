"""manage.py export_codex --out DIR: every imported Codex thread back as rollout files."""

from __future__ import annotations

from codex.services import export_codex
from kernel.commands import ProgressCommand, require_migrated


class Command(ProgressCommand):
    help = (
        "Write every imported Codex thread back under DIR as Codex wrote it: each rollout (sealed segments "
        "too) at its path relative to the Codex home, each line the record that came in."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="an empty or new directory, laid out as a $CODEX_HOME")

    def handle(self, *args, out: str, **options):
        require_migrated()
        report = self.run_service(export_codex, out=out)
        self.stdout.write(f"Wrote {report.threads} threads: {report.files} rollout files, {report.lines} lines.")
        self.section("Not written", report.skipped)
        self.stdout.write(self.style.SUCCESS(f"Codex home written to {report.out}"))
