"""How the commands show a long phase: a progress line redrawn on a terminal, one line per phase elsewhere."""

from __future__ import annotations

from django.core.management.base import OutputWrapper


class CommandProgress:
    """A ``progress(phase, done, total)`` callable writing to ``out``: on a terminal one line
    redrawn in place (carriage return), elsewhere (logs, CI) one line as each phase starts."""

    def __init__(self, out: OutputWrapper):
        self.out = out
        self.terminal = out.isatty()
        self.shown = False
        self.phases: set[str] = set()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.terminal:
            if phase not in self.phases:
                self.phases.add(phase)
                self.out.write(f"{phase}...")
            return
        width = 30
        filled = width * done // total if total else width
        bar = "#" * filled + "-" * (width - filled)
        self.out.write(f"\r{phase}: [{bar}] {done:,}/{total:,}\x1b[K", ending="")
        self.out.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown:
            self.out.write("\r\x1b[K", ending="")
            self.shown = False
