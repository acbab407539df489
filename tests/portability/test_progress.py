"""The commands' progress (kernel.commands.ProgressCommand): a line redrawn in place on a terminal,
cleared before the report; one line per phase elsewhere."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from registry.models import Project
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_progress_line_is_redrawn_in_place_and_cleared(tmp_path):
    ProjectFactory.create_batch(2)
    terminal = Terminal()
    call_command("export_instance", str(tmp_path / "out.jsonl"), stdout=terminal)
    text = terminal.getvalue()
    assert "\rprojects: 1/2\x1b[K" in text and "\rprojects: 2/2\x1b[K" in text
    assert "\r\x1b[KExported to" in text  # the line is cleared before the report
    Project.objects.all().delete()  # an instance is imported only into an empty database
    terminal = Terminal()
    call_command("import_instance", str(tmp_path / "out.jsonl"), "--dry-run", stdout=terminal)
    assert "\rprojects: 2/2\x1b[K" in terminal.getvalue() and "\r\x1b[KImported from" in terminal.getvalue()


def test_elsewhere_one_line_per_phase(tmp_path):
    ProjectFactory.create_batch(2)
    out = io.StringIO()
    call_command("export_instance", str(tmp_path / "out.jsonl"), stdout=out)
    assert out.getvalue().startswith("projects...\nExported to")
