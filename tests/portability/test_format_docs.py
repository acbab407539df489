"""docs/portability.md lists every key of every record, as the code reads and writes them."""

from __future__ import annotations

import re
from pathlib import Path

from portability.format import KINDS
from portability.parse import REVISION_KEYS, REVISION_OPTIONAL_KEYS, ROW_KEYS, ROW_OPTIONAL_KEYS
from portability.records import (
    AGENT,
    API_TOKEN,
    CLAUDE_CODE_SESSION,
    IMPORT_RUN,
    PROJECT,
    TIMELINE,
    WORKSPACE,
    record_keys,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "portability.md"


def documented() -> dict[str, tuple[set[str], set[str]]]:
    """type -> (required keys, optional keys), from the table of records."""
    table = {}
    for line in DOC.read_text().splitlines():
        match = re.fullmatch(r"\| `(\w+)` \| (.+) \|", line)
        if match:
            required, _, optional = match[2].partition("optional:")
            table[match[1]] = (set(re.findall(r"`(\w+)`", required)), set(re.findall(r"`(\w+)`", optional)))
    return table


def test_the_documented_keys_are_the_keys_of_each_record():
    table = documented()
    for kind in (PROJECT, WORKSPACE, AGENT, TIMELINE, CLAUDE_CODE_SESSION, API_TOKEN, IMPORT_RUN):
        assert table[kind.type] == (record_keys(kind) - {"type"}, set()), kind.type
    assert table["row"] == (ROW_KEYS - {"type"}, ROW_OPTIONAL_KEYS)
    assert table["row_revision"] == (REVISION_KEYS - {"type"}, REVISION_OPTIONAL_KEYS)
    assert table["timeline_end"] == ({"agent_id", "rows", "sha256"}, set())


def test_every_column_of_every_carried_table_is_a_key_but_the_derived_hash():
    for kind in (PROJECT, WORKSPACE, AGENT, TIMELINE, CLAUDE_CODE_SESSION, API_TOKEN, IMPORT_RUN):
        columns = {f.name for f in kind.model._meta.concrete_fields} - {"directory_hash"}
        keys = {"agent" if kind is TIMELINE and key == "agent_id" else key for key in record_keys(kind) - {"type"}}
        assert keys == columns, kind.type


def test_the_documented_counts_name_every_kind():
    header = next(line for line in DOC.read_text().splitlines() if '"counts": {' in line)
    assert set(re.findall(r'"(\w+)": \d+', header)) == set(KINDS)
