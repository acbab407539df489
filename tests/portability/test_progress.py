"""The commands' progress: a bar redrawn in place on a terminal, one line per phase elsewhere."""

from __future__ import annotations

import io

from django.core.management.base import OutputWrapper

from portability.progress import CommandProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_bar_is_redrawn_in_place_and_cleared():
    stream = Terminal()
    progress = CommandProgress(OutputWrapper(stream))
    progress("timeline rows", 5000, 20000)
    progress("timeline rows", 20000, 20000)
    progress.end()
    text = stream.getvalue()
    assert "\rtimeline rows: [#######-----------------------] 5,000/20,000" in text
    assert "\rtimeline rows: [##############################] 20,000/20,000" in text
    assert "\n" not in text and text.endswith("\r\x1b[K")


def test_elsewhere_one_line_per_phase():
    stream = io.StringIO()
    progress = CommandProgress(OutputWrapper(stream))
    for phase, done in (("projects", 1), ("projects", 2), ("timeline rows", 10), ("timeline rows", 20)):
        progress(phase, done, 20)
    progress.end()
    assert stream.getvalue() == "projects...\ntimeline rows...\n"
