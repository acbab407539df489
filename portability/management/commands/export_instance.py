"""manage.py export_instance FILE: everything this instance holds, as one file (docs/portability.md)."""

from __future__ import annotations

from django.core.management.base import CommandError

from kernel.commands import ProgressCommand
from portability.export import write_instance


class Command(ProgressCommand):
    help = (
        "Write every project, workspace, agent, timeline (rows and heads), Claude Code session and legacy import "
        "run to FILE in the chartr instance format (JSON Lines; gzip when FILE ends in .gz), for import_instance "
        "on another database of either engine. API tokens (still hashed) only with --with-tokens."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="where to write the export (.jsonl, or .jsonl.gz)")
        parser.add_argument("--with-tokens", action="store_true", help="include the API tokens (their hashes)")

    def handle(self, *args, file: str, with_tokens: bool, **options):
        try:
            counts = write_instance(path=file, with_tokens=with_tokens, progress=self.progress())
        except OSError as exc:
            raise CommandError(f"Cannot write {file}: {exc.strerror or exc}") from exc
        finally:
            self.end_progress()
        self.stdout.write(f"Exported to {file}: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
