"""What a timeline item must look like.

Known types have their required fields checked; any other type is accepted as
long as the item is a JSON object with a string ``type``, so newer agents can
store item kinds this server does not know yet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ValidationError

from kernel.errors import PayloadTooLarge

#: Items per call of the API append (``timeline.services.append_timeline_items``).
MAX_ITEMS_PER_APPEND = 500
MAX_ITEM_TYPE_LENGTH = 64
MAX_ITEM_ID_LENGTH = 256
TOOL_CALL_STATUSES = ("running", "completed", "failed", "canceled")

#: A JSON value that is anything but null.
PRESENT: dict[str, Any] = {"not": {"type": "null"}}

#: The one declaration of the known item types: type -> {required field: JSON Schema of its value}.
#: The server's checks below read these schemas, and timeline/api/schema.py publishes them as the
#: OpenAPI components, so what the API documents and what it enforces cannot drift apart.
KNOWN_ITEM_TYPES: dict[str, dict[str, dict[str, Any]]] = {
    "user_message": {"text": {"type": "string"}},
    "assistant_message": {"text": {"type": "string"}},
    "reasoning": {"text": {"type": "string"}},
    "tool_call": {
        "callId": {"type": "string"},
        "name": {"type": "string"},
        "status": {"type": "string", "enum": list(TOOL_CALL_STATUSES)},
    },
    "todo": {"items": {"type": "array", "items": {}}},
    "interaction": {"request": PRESENT},
    "error": {"message": {"type": "string"}},
    "compaction": {"status": {"type": "string"}},
    # An imported item the checks above refuse, kept whole: ``item`` is the original as the
    # legacy store held it, ``problems`` what is wrong with it (legacy.paseo normalises to it).
    "legacy_item": {"item": {"type": "object"}, "problems": {"type": "array", "items": {}}},
}

#: Programs whose own records a timeline keeps whole (a Claude Code transcript line, a Codex rollout
#: line): such a row's item is ``{"type": "<namespace>.<the record's own type>", "record": <the record,
#: untouched>}``. No check of chartr's own item types applies to the record, it comes back deep-equal,
#: and the fleet search indexes its strings like any item's (``foreign_item``, ``foreign_record``).
FOREIGN_NAMESPACES = ("claude_code", "codex")
#: The record's own type when it has none, or one that does not fit an item type.
FOREIGN_FALLBACK_TYPE = "record"

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "boolean": lambda v: isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
}
_TYPE_WORDS = {"string": "a string", "array": "a list", "object": "a JSON object"}
LEGACY_ITEM_TYPE = "legacy_item"


def value_matches(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` fits one of the field schemas above (the small part of JSON Schema they use)."""
    if "not" in schema and value_matches(schema["not"], value):
        return False
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_JSON_TYPES[name](value) for name in types):
            return False
    return "enum" not in schema or value in schema["enum"]


def describe(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(schema["enum"])
    if schema is PRESENT:
        return "present (not null)"
    return _TYPE_WORDS[schema["type"]]


def item_problems(item: Any) -> list[str]:
    """Everything wrong with ``item``, as readable sentences; empty when it is fine."""
    if not isinstance(item, dict):
        return ["An item must be a JSON object."]
    item_type = item.get("type")
    if not isinstance(item_type, str) or not item_type:
        return ["An item needs a non-empty string 'type'."]
    if len(item_type) > MAX_ITEM_TYPE_LENGTH:
        return [f"An item type is at most {MAX_ITEM_TYPE_LENGTH} characters."]
    namespace = item_type.split(".", 1)[0] if "." in item_type else None
    if namespace in FOREIGN_NAMESPACES:
        ok = isinstance(item.get("record"), dict) and set(item) == {"type", "record"}
        return [] if ok else [f"A {namespace} item is exactly 'type' and a JSON object 'record'."]
    problems = []
    for field, schema in KNOWN_ITEM_TYPES.get(item_type, {}).items():
        if field not in item:
            problems.append(f"A {item_type} item needs '{field}'.")
        elif not value_matches(schema, item[field]):
            problems.append(f"A {item_type} item's '{field}' must be {describe(schema)}.")
    return problems


def foreign_item(namespace: str, record: dict, record_type: Any) -> dict:
    """``record`` (another program's own record, kept untouched) as a timeline item of ``namespace``."""
    if namespace not in FOREIGN_NAMESPACES:
        raise ValueError(f"Unknown foreign namespace {namespace!r}.")
    fits = (
        isinstance(record_type, str) and record_type and len(namespace) + 1 + len(record_type) <= MAX_ITEM_TYPE_LENGTH
    )
    return {"type": f"{namespace}.{record_type if fits else FOREIGN_FALLBACK_TYPE}", "record": record}


def foreign_record(item: Any, namespace: str) -> dict | None:
    """The record a ``namespace`` item holds, or None for any other item."""
    if isinstance(item, dict) and str(item.get("type", "")).startswith(namespace + "."):
        record = item.get("record")
        return record if isinstance(record, dict) else None
    return None


def new_item_problems(item: Any, item_id: Any, *, encoded: str | None = None) -> dict[str, list[str]]:
    """Everything wrong with one item offered for the timeline (committed or
    provisional), keyed ``item`` / ``item_id``; empty when it is fine.
    ``encoded``: the item's ``item_json``, when the caller has it."""
    errors: dict[str, list[str]] = {}
    problems = item_problems(item)
    if not problems and _may_contain_nul(encoded) and contains_nul(item):
        problems = ["Items must not contain NUL characters."]
    if problems:
        errors["item"] = problems
    id_problems = item_id_problems(item_id)
    if id_problems:
        errors["item_id"] = id_problems
    return errors


def item_id_problems(item_id: Any) -> list[str]:
    if item_id is None:
        return []
    if not isinstance(item_id, str) or not item_id:
        return ["item_id must be a non-empty string or null."]
    if len(item_id) > MAX_ITEM_ID_LENGTH:
        return [f"item_id is at most {MAX_ITEM_ID_LENGTH} characters."]
    if "\x00" in item_id:
        return ["item_id must not contain NUL."]
    return []


def item_json(item: Any) -> str:
    """An item's compact JSON text, the form chartr measures it in (``item_bytes``)."""
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def item_bytes(item: Any) -> int:
    """An item's size as chartr counts it everywhere (the limit, ``timeline_bytes``): its compact UTF-8 JSON."""
    return json_bytes(item_json(item))


def known_item_bytes(item: Any, encoded: str | None) -> int:
    """``item_bytes(item)``, read off ``encoded`` (its ``item_json``) when the caller has it."""
    return item_bytes(item) if encoded is None else json_bytes(encoded)


def json_bytes(text: str) -> int:
    """The UTF-8 length of ``text`` (an ``item_json``)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _may_contain_nul(encoded: str | None) -> bool:
    # JSON writes U+0000 as the escape \u0000 wherever it is (a key or a value), so
    # text without that escape holds none; with it, it may be a literal backslash's.
    return encoded is None or "\\u0000" in encoded


def check_item_size(item: dict, *, index: int | None = None, encoded: str | None = None) -> None:
    """Refuse an item over ``CHARTR_MAX_ITEM_BYTES`` (``encoded``: its ``item_json``, when the caller has it)."""
    limit = settings.CHARTR_MAX_ITEM_BYTES
    size = known_item_bytes(item, encoded)
    if size > limit:
        where = f"Item {index}" if index is not None else "The item"
        raise PayloadTooLarge(f"{where} is {size} bytes; the limit is {limit}.", extra={"limit": limit, "size": size})


def contains_nul(value: Any) -> bool:
    """PostgreSQL cannot store U+0000 in text or jsonb, so items carrying it are refused everywhere."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(v) for v in value)
    return False


def canonical_item(value: Any) -> Any:
    """``value`` in a form two items compare equal in exactly when they carry the same JSON.

    Stored items do not come back as they were sent: PostgreSQL's jsonb
    reorders keys and keeps numbers as decimals (``1e16`` is read back as
    the integer ``10000000000000000``), SQLite keeps the text. Python's own
    ``==`` ignores key order but also says ``true == 1``. Here objects compare
    by their key set, numbers by decimal value (``1``, ``1.0`` and ``1e0`` are
    one number, as in jsonb), and booleans, null, strings, lists and objects
    only with their own kind, so the answer is the same on both databases.
    """
    if value is None or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((key, canonical_item(item)) for key, item in value.items())))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(canonical_item(item) for item in value))
    return ("other", repr(value))


def same_item(left: Any, right: Any) -> bool:
    """Whether two items are the same JSON whichever database stored either (see ``canonical_item``)."""
    return canonical_item(left) == canonical_item(right)


class NewItem(Protocol):
    """An item offered to the append (``timeline.services.NewTimelineItem``)."""

    @property
    def item(self) -> Any: ...
    @property
    def item_id(self) -> Any: ...


def validate_new_items(items: Sequence[NewItem]) -> list[str | None]:
    """Check the whole batch before touching the database, so a bad item stores nothing.

    Returns each item's compact JSON (``timeline.items.item_json``): its size, its
    NUL check and its growth counter all read that one encoding."""
    if not 1 <= len(items) <= MAX_ITEMS_PER_APPEND:
        raise ValidationError({"items": [f"Send between 1 and {MAX_ITEMS_PER_APPEND} items per call."]}, code="invalid")
    errors: dict[str, list[str]] = {}
    seen_ids: dict[str, int] = {}
    encoded = [encoded_or_none(new.item) for new in items]
    for index, new in enumerate(items):
        for name, problems in new_item_problems(new.item, new.item_id, encoded=encoded[index]).items():
            errors[f"items[{index}].{name}"] = problems
        if new.item_id is not None and f"items[{index}].item_id" not in errors:
            if new.item_id in seen_ids:
                errors[f"items[{index}].item_id"] = [
                    f"item_id repeats items[{seen_ids[new.item_id]}].item_id in the same call."
                ]
            seen_ids[new.item_id] = index
    if errors:
        raise ValidationError(errors, code="invalid")
    for index, (new, text) in enumerate(zip(items, encoded, strict=True)):
        check_item_size(new.item, index=index, encoded=text)
    return encoded


def encoded_or_none(item: object) -> str | None:
    """``item_json(item)``, or None for what is no JSON object or cannot be encoded (the checks then say why)."""
    if not isinstance(item, dict):
        return None
    try:
        return item_json(item)
    except (TypeError, ValueError):
        return None
