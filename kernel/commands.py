"""What the importers' and exporters' commands share (legacy, portability, claude_code,
codex): progress as a bar on a terminal and one line per phase elsewhere, report sections, and the
refusal to run on a database that is not migrated."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from kernel.errors import ChartrError
from kernel.migrations import not_migrated


def require_migrated() -> None:
    """Every migration applied, as ``manage.py migrate --check`` checks it (kernel/migrations.py)."""
    pending = not_migrated()
    if pending:
        raise CommandError(f"The database is not migrated ({pending}); run manage.py migrate first.")


class ProgressCommand(BaseCommand):
    """A command whose service reports ``progress(phase, done, total)``: pass it ``self.progress()``,
    and call ``end_progress()`` before printing anything else."""

    _progress_shown = False
    _phases_seen: set[str] | None = None

    def progress(self):
        return self._bar if self.stdout.isatty() else self._phase_line

    def _phase_line(self, phase: str, done: int, total: int) -> None:
        """Not a terminal (logs, CI): one line as each phase starts, no carriage returns."""
        if self._phases_seen is None:
            self._phases_seen = set()
        if phase not in self._phases_seen:
            self._phases_seen.add(phase)
            self.stdout.write(f"{phase}...")

    def _bar(self, phase: str, done: int, total: int) -> None:
        self._progress_shown = True
        self.stdout.write(f"\r{phase}: {done:,}/{total:,}\x1b[K", ending="")
        self.stdout.flush()

    def end_progress(self) -> None:
        if self._progress_shown:
            self.stdout.write("\r\x1b[K", ending="")
            self._progress_shown = False

    def run_service(self, service, **arguments):
        """``service(progress=..., **arguments)`` with the progress ended after it; its refusal (a
        ``ChartrError``) a ``CommandError`` with the problems it lists (``extra["problems"]``), one a line."""
        try:
            return service(progress=self.progress(), **arguments)
        except ChartrError as exc:
            problems = exc.extra.get("problems", [])
            raise CommandError("\n".join([exc.message, *(f"  {problem}" for problem in problems)])) from exc
        finally:
            self.end_progress()

    def import_title(self, title: str, report) -> None:
        """An import's first line: ``title``, saying so when ``report`` is a dry run's."""
        self.stdout.write(f"{title} (dry run: everything rolled back)" if report.dry_run else title)

    def import_ending(self, report, recorded: str, *, dry_run: str = "Dry run: the database is unchanged.") -> None:
        """An import's last lines: ``dry_run`` after a dry run, else the data snapshot that undoes it and ``recorded``."""
        if report.dry_run:
            self.stdout.write(dry_run)
            return
        if report.snapshot:
            self.stdout.write(
                f"Data snapshot before the import: {report.snapshot} (manage.py restore --from {report.snapshot} undoes it)"
            )
        self.stdout.write(self.style.SUCCESS(recorded))

    def section(self, title: str, lines: list[str]) -> None:
        if lines:
            self.stdout.write(f"{title} ({len(lines)}):")
            for line in lines:
                self.stdout.write(f"  {line}")
