"""The schema states that text in a request may not hold NUL (kernel/api/schema_text.py), as the server holds it."""

from __future__ import annotations

import re

import pytest

from kernel.api.schema_text import NUL_RULE, request_components
from tests.kernel.api.test_schema import operations, schema  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def text_schemas(node, where: str):
    """``(where, schema)`` for every schema of a string in ``node`` that is plain text (no format or enum)."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from text_schemas(item, f"{where}[{index}]")
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if (kind == "string" or (isinstance(kind, list) and "string" in kind)) and not {"format", "enum", "const"} & set(
        node
    ):
        yield where, node
    for key in ("properties", "patternProperties"):
        for name, value in node.get(key, {}).items():
            yield from text_schemas(value, f"{where}.{name}")
    for key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
        yield from text_schemas(node.get(key), f"{where}.{key}")


def request_text(schema):  # noqa: F811
    components = schema["components"]["schemas"]
    for name in sorted(request_components(components)):
        yield from text_schemas(components[name], name)
    for path, method, operation in operations(schema):
        for parameter in operation.get("parameters", []):
            yield from text_schemas(parameter["schema"], f"{method} {path} {parameter['in']} {parameter['name']}")


def test_every_string_a_request_carries_has_a_pattern_that_refuses_nul(schema):  # noqa: F811
    found = list(request_text(schema))
    assert len(found) > 20
    # DRF's bodies and the plain views' alike, and the timeline item types an append carries.
    assert {where.split(".")[0] for where, _ in found} >= {"ProjectCreateRequest", "NewItemRequest", "UserMessageItem"}
    probes = ["a\x00b", "\x00", "/srv/a\x00b", "1\x00", '"1"\x00', "a" * 10 + "\x00"]
    lax = [
        where for where, text in found if "pattern" not in text or any(re.search(text["pattern"], p) for p in probes)
    ]
    assert lax == []


def test_patterns_still_say_what_they_said(schema):  # noqa: F811
    """A field that refused whitespace alone still does; text without NUL still passes."""
    found = dict(request_text(schema))
    display_name = found["PatchedProjectUpdateRequest.display_name"]["pattern"]
    assert re.search(display_name, "my app") and re.search(display_name, " x ")
    assert not re.search(display_name, " \t ") and not re.search(display_name, "a\x00")
    directory = found["ProjectCreateRequest.directory"]["pattern"]
    assert re.search(directory, "/srv/my app") and re.search(directory, "/")
    assert not re.search(directory, "/a/../b") and not re.search(directory, "relative")
    title = found["AgentCreateRequest.title"]["pattern"]
    assert re.search(title, "") and re.search(title, "any text\n at all")


def test_the_description_states_the_rule_for_free_form_values(schema):  # noqa: F811
    assert NUL_RULE in schema["info"]["description"]
    assert "U+0000" in NUL_RULE


def test_the_server_refuses_what_the_schema_says(api):
    response = api.post("/api/v1/projects", {"directory": "/srv/nul", "display_name": "a\x00b"}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"
    assert "NUL" in str(response.json()["error"]["fields"])
