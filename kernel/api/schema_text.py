"""The schema states that no text in a request may hold NUL (U+0000).

The strict parser (kernel/api/parsers.py) refuses a NUL in any string or key
of a body, and chartr.middleware one in the path or the query, with a 400
``invalid``: PostgreSQL cannot store it. This post-processing hook says so
where a client reads the contract: every string a request can carry, in a
body (the ``...Request`` components) or as a parameter, gets a pattern that
refuses NUL, one that still says whatever the field's own pattern said; and
the document's description states the rule for the free-form JSON values
(``labels``, ``config``, a timeline item) no pattern can reach.
"""

from __future__ import annotations

import re

from kernel.api.parsers import NOT_ONLY_WHITESPACE

#: A positive bracket expression (``[A-Za-z0-9._:-]``), in which a ``.`` is itself.
POSITIVE_CLASS = re.compile(r"\[[^^\]](?:\\.|[^\]])*\]")

#: Text without NUL.
NO_NUL = "^[^\\x00]*$"
#: The start of a pattern that refuses NUL anywhere, before what the field's own pattern says.
NUL_FREE = "^(?=[^\\x00]*$)"
#: Text without NUL that is not whitespace alone: NOT_ONLY_WHITESPACE's
#: character, NUL-free text on either side, so every regex engine reads it (no lookahead).
NOT_ONLY_WHITESPACE_NOR_NUL = "^[^\\x00]*" + NOT_ONLY_WHITESPACE.replace("[^", "[^\\x00", 1) + "[^\\x00]*$"
NUL_RULE = (
    "No text in a request may hold a NUL character (U+0000): not a string or a key anywhere in a body "
    "(free-form JSON values such as `labels`, `config` and timeline items included), not a path or query "
    "parameter. Such a request is refused with a 400 `invalid`."
)


def _is_text(schema: dict) -> bool:
    kind = schema.get("type")
    return (kind == "string" or (isinstance(kind, list) and "string" in kind)) and not {
        "format",
        "enum",
        "const",
    } & set(schema)


def may_match_nul(pattern: str) -> bool:
    """Whether ``pattern`` may match text with a NUL: it has a negated class or a wildcard.

    One made of positive classes alone (``[A-Za-z0-9._:-]{1,128}``, ``[0-9]+``)
    already refuses NUL, and stays as it is.
    """
    if pattern in (NO_NUL, NOT_ONLY_WHITESPACE_NOR_NUL) or pattern.startswith(NUL_FREE):
        return False
    outside_classes = POSITIVE_CLASS.sub("", pattern.replace("\\\\", "").replace("\\.", ""))
    return "[^" in pattern or "." in outside_classes or "\\S" in pattern or "\\W" in pattern


def refuse_nul(schema) -> None:
    """Give every text schema in ``schema`` (in place, nested ones too) a pattern that refuses NUL."""
    if isinstance(schema, list):
        for item in schema:
            refuse_nul(item)
        return
    if not isinstance(schema, dict):
        return
    if _is_text(schema):
        pattern = schema.get("pattern")
        if pattern is None:
            schema["pattern"] = NO_NUL
        elif pattern == NOT_ONLY_WHITESPACE:
            schema["pattern"] = NOT_ONLY_WHITESPACE_NOR_NUL
        elif may_match_nul(pattern):
            # The field's own pattern, behind a lookahead that refuses NUL anywhere in the text.
            rest = pattern[1:] if pattern.startswith("^") else f"[\\s\\S]*?(?:{pattern})"
            schema["pattern"] = NUL_FREE + rest
    for key in ("properties", "patternProperties"):
        for value in schema.get(key, {}).values():
            refuse_nul(value)
    for key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
        refuse_nul(schema.get(key))


def refs(node) -> set[str]:
    """The component names ``node`` refers to (``$ref``), at any depth."""
    if isinstance(node, list):
        return set().union(*(refs(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"].rsplit("/", 1)[1]} if isinstance(node.get("$ref"), str) else set()
    return found.union(*(refs(value) for value in node.values()))


def request_components(components: dict) -> set[str]:
    """The ``...Request`` components and every one they refer to (a timeline item's types, say).

    A component a response shares holds no NUL either (chartr stores none), so its
    pattern is as true of the response.
    """
    reached = {name for name in components if name.endswith("Request")}
    todo = list(reached)
    while todo:
        for name in refs(components.get(todo.pop())) - reached:
            if name in components:
                reached.add(name)
                todo.append(name)
    return reached


def state_that_nul_is_refused(result, generator, request, public):
    """drf-spectacular post-processing hook: NUL-free patterns on request text, and the rule in the description."""
    components = result.get("components", {}).get("schemas", {})
    for name in sorted(request_components(components)):
        refuse_nul(components[name])
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                refuse_nul(parameter.get("schema"))
    info = result.setdefault("info", {})
    info["description"] = f"{info.get('description', '')}\n\n{NUL_RULE}".strip()
    return result
