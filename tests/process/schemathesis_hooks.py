"""Schemathesis hooks for tests/process/test_schemathesis.py, loaded by `st run` through SCHEMATHESIS_HOOKS.

The one hook drops exactly the "schema-valid request rejected" (ST202) failures
whose refusal no OpenAPI schema can state: the 400 must name only the fields
below, each with exactly the message below. Every other refusal of a
schema-valid request still fails the run.
"""

from __future__ import annotations

import json
import re

import schemathesis

#: field -> the one message that is not a schema gap.
UNSTATABLE_REFUSALS = {
    # Cursors are opaque: only a `next_cursor` the server handed out is valid.
    "cursor": "The cursor is not valid for this list.",
    # A body that names a row by id: whether that row exists is data, not schema.
    "project_id": "No project has this id.",
    "workspace_id": "No workspace has this id.",
    # Whether a cwd lies in the workspace depends on the workspace's stored directory.
    "cwd": "An agent's cwd must be its workspace's directory or a directory below it.",
    # Whether a reason is needed depends on the agent's stored state as well as the body.
    "attention_reason": "An attention reason is required when requires_attention is true.",
    # A time range: JSON Schema compares no two fields (the fleet search's until after its since).
    "until": "Must be later than since.",
    # A Claude Code session's summary comes with the version it was folded from, and only for a main
    # key (no subpath): one field depending on another's value, which no schema here states.
    "summary": "Send a JSON object with its summary_version, for a main key.",
    # The stream takes a bearer token or a ticket (two security alternatives): OpenAPI cannot say "not both".
    "ticket": "Send a ticket or an Authorization header, not both.",
}

#: (field pattern, message pattern) for refusals that name a place in the body.
UNSTATABLE_PATTERNS = [
    # Two items of one append with the same item_id: JSON Schema's uniqueItems compares whole items.
    (re.compile(r"items\[\d+\]\.item_id"), re.compile(r"item_id repeats items\[\d+\]\.item_id in the same call\.")),
    # Two rows of one row write (POST .../timeline/rows, PUT .../timeline) at one seq: the same gap.
    (re.compile(r"rows\[\d+\]\.seq"), re.compile(r"seq \d+ repeats rows\[\d+\]\.seq in the same call\.")),
]


def is_unstatable(name: str, messages: list) -> bool:
    if UNSTATABLE_REFUSALS.get(name) is not None and messages == [UNSTATABLE_REFUSALS[name]]:
        return True
    return len(messages) == 1 and any(
        field.fullmatch(name) and isinstance(messages[0], str) and message.fullmatch(messages[0])
        for field, message in UNSTATABLE_PATTERNS
    )


def error_fields(response) -> dict:
    try:
        body = json.loads(response.content)
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("fields") or {} if isinstance(error, dict) else {}


def is_unstatable_refusal(status_code: int, fields: dict) -> bool:
    return (
        status_code == 400 and bool(fields) and all(is_unstatable(name, messages) for name, messages in fields.items())
    )


def breaks_a_header_pattern(case) -> bool:
    """Schemathesis' coverage phase makes header values of letters and digits only, so it cannot
    satisfy a pattern that needs `"` or `*` (If-Match) and sends a value that breaks it as "valid"."""
    for parameter in case.operation.headers:
        pattern = parameter.definition.get("schema", {}).get("pattern")
        value = (case.headers or {}).get(parameter.name)
        if pattern and isinstance(value, str) and re.search(pattern, value) is None:
            return True
    return False


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    if failure.code != "ST202":
        return True
    if breaks_a_header_pattern(case):
        return False
    return not is_unstatable_refusal(response.status_code, error_fields(response))
