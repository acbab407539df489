"""docs/legacy.md lists every key the legacy parsers read, and only those: the page cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from legacy import jsonl, paseo, records

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "legacy.md"


def sections() -> dict[str, list[str]]:
    """Each ``## `file` `` section's keys: the first column of its tables."""
    found: dict[str, list[str]] = {}
    current = None
    for line in DOC.read_text().splitlines():
        heading = re.match(r"## `([^`]+)`", line)
        if heading:
            current = found.setdefault(heading.group(1), [])
        elif current is not None and (cell := re.match(r"\| `([^`]+)` \|", line)):
            current.append(cell.group(1))
    return found


#: The section of each file, the keys its parser models (every other one goes to ``extra``), and the parser.
FILES = {
    "projects/projects.json": (records.PROJECT_KEYS | {"projectId"}, records),
    "projects/workspaces.json": (records.WORKSPACE_KEYS | {"workspaceId", "projectId"}, records),
    "agents/<id>.json": (records.AGENT_KEYS, records),
    "agent-timelines/agent-<base64url(agent id), no padding>.json": (paseo.ROW_KEYS, paseo),
    "timelines/<agent_id>.jsonl": (set(jsonl.SHORT_KEYS), jsonl),
    "timelines.db": (set(), paseo),
}


def test_every_file_chartr_reads_has_its_section():
    assert set(sections()) == set(FILES)


@pytest.mark.parametrize("section", sorted(FILES))
def test_every_key_a_parser_models_is_documented_once(section):
    keys = sections()[section]
    modelled, _ = FILES[section]
    assert modelled <= set(keys), f"{section}: undocumented {sorted(modelled - set(keys))}"
    assert len(keys) == len(set(keys)), f"{section}: a key listed twice"


@pytest.mark.parametrize("section", sorted(FILES))
def test_every_documented_key_is_read_by_its_parser(section):
    modelled, parser = FILES[section]
    source = Path(parser.__file__).read_text()
    for key in sections()[section]:
        if key in modelled:
            continue  # read through its shape (timeline/rows.py), whose keys the test above compares
        # A table.column of timelines.db is read by the SQL; every other key by its name in quotes.
        table, _, column = key.rpartition(".")
        if table:
            assert re.search(rf"\b{table}\b[^\"]*\b{column}\b|\b{column}\b[^\"]*\b{table}\b", source), key
        else:
            assert f'"{key}"' in source, f"{section}: {key} is documented but {parser.__name__} never reads it"
