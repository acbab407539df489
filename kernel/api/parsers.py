"""The only request body parser for /api/: strict, bounded JSON, for DRF's views
(``StrictJSONParser``) and the plain ones (``parse_json_body``, kernel/api/plain.py) alike.

Everything a client can put in a body is checked here, before any serializer
or database sees it: the size (413), the encoding, nesting depth, numbers that
are not finite, and text PostgreSQL cannot store (NUL) or no UTF-8 codec can
encode (lone surrogates such as ``"\\ud800"``). Each of these would otherwise
surface as a 500 from deep inside the database driver.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from django.conf import settings
from rest_framework import parsers

from kernel.api.errors import Invalid
from kernel.errors import PayloadTooLarge

#: Some character that ``str.strip()`` keeps (DRF trims with it), spelt so every regex engine reads it alike:
#: as a schema's ``pattern``, text that is not whitespace alone.
NOT_ONLY_WHITESPACE = "[^\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
#: Deeper documents are refused; nothing chartr stores needs more.
MAX_JSON_DEPTH = 64


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"Number {text[:40]} is out of range.")
    return value


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON.")


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object, refusing a key given twice: last-one-wins would let
    ``{"guard": 0, "guard": null}`` switch a safety check off unnoticed."""
    document = {}
    for key, value in pairs:
        if key in document:
            raise DuplicateKey(key)
        document[key] = value
    return document


#: How a body is decoded.
STRICT_HOOKS = {
    "parse_float": _finite_float,
    "parse_constant": _reject_constant,
    "object_pairs_hook": _object_without_duplicate_keys,
}
#: Built once: ``json.loads`` would build a decoder from the hooks on every call.
strict_loads = json.JSONDecoder(**STRICT_HOOKS).decode


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None if it can."""
    if "\x00" in value:
        return "NUL characters are not allowed."
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "Text must be valid Unicode (lone surrogates are not allowed)."
    return None


def check_json_document(document) -> None:
    """Refuse text no database can store and nesting beyond MAX_JSON_DEPTH.

    Iterative, so a hostile document cannot exhaust the interpreter's stack.
    Raises ``Invalid`` naming the offending location.
    """
    stack: list[tuple[object, int, str]] = [(document, 0, "")]
    while stack:
        value, depth, where = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise Invalid({where or "non_field_errors": [f"JSON is nested more than {MAX_JSON_DEPTH} levels deep."]})
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise Invalid({where or "non_field_errors": [problem]})
        elif isinstance(value, dict):
            for key, item in value.items():
                key_where = f"{where}.{key}" if where else str(key)
                problem = text_problem(key)
                if problem:
                    raise Invalid({(where or "non_field_errors"): [f"Key: {problem}"]})
                stack.append((item, depth + 1, key_where))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                stack.append((item, depth + 1, f"{where}[{index}]"))


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The request body is larger than the limit of {limit} bytes.")


def limited_body(meta, read: Callable[[int], bytes]) -> bytes:
    """The request body, as ``read(size)`` gives it; 413 past ``CHARTR_MAX_BODY_BYTES``, by the
    declared length (``meta``'s ``CONTENT_LENGTH``) before a byte is read."""
    limit = settings.CHARTR_MAX_BODY_BYTES
    declared = meta.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    raw = read(limit + 1)
    if len(raw) > limit:
        raise too_large(limit)
    return raw


def parse_json_body(raw: bytes):
    """The body's JSON document; ``Invalid`` (400) for anything but one strict JSON value."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid(message="The request body is not valid UTF-8.") from None
    try:
        document = strict_loads(text)
    except DuplicateKey as exc:
        raise Invalid({exc.key: ["Duplicate key: each key may appear once."]}) from None
    except RecursionError:
        raise Invalid(message=f"JSON is nested more than {MAX_JSON_DEPTH} levels deep.") from None
    except json.JSONDecodeError as exc:
        raise Invalid(message=f"The request body is not valid JSON: {exc}") from None
    except ValueError:
        # Integers with thousands of digits, numbers beyond float range, NaN/Infinity.
        raise Invalid(message="The request body contains a number that is out of range.") from None
    check_json_document(document)
    return document


class StrictJSONParser(parsers.BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        # DRF calls a parser only with a body to read (a stream) and its request in the context.
        return parse_json_body(limited_body(parser_context["request"].META, stream.read))
