from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command

from tests.codex.builders import CodexHomeBuilder, real_shaped_home
from timeline.models import TimelineRow


def run(command: str, *args) -> str:
    out = StringIO()
    call_command(command, *[str(arg) for arg in args], stdout=out)
    return out.getvalue()


def dump_database(*, runs: bool = True) -> dict[str, list[dict]]:
    """Every row of every table, in primary-key order (without the import runs' log when ``runs`` is False)."""
    return {
        model._meta.label: list(model.objects.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.managed and (runs or model._meta.label != "codex.CodexImportRun")
    }


def records(agent_id: str) -> list[dict]:
    """The Codex records of the agent's timeline, in seq order."""
    items = TimelineRow.objects.filter(agent_id=agent_id).order_by("seq").values_list("item", flat=True)
    return [item["record"] for item in items]


@pytest.fixture
def home(tmp_path) -> CodexHomeBuilder:
    # A space and non-ASCII characters in the home's own path.
    return real_shaped_home(tmp_path / "codex home ü")
