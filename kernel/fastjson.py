"""JSON at C speed where it gives the same values as the standard library.

Decoding calls the standard library's own C scanner directly: most of
``json.loads``'s time on a small object is its Python wrapping. Encoding uses
orjson, several times faster than ``json``, which differs in a few places that
matter to a store of record: it cannot write an integer beyond 64 bits, and
leaves U+2028/U+2029 unescaped where DRF's renderer escapes them. The encoder
falls back to ``json`` and adds the escapes, so its result is the JSON DRF writes.
"""

from __future__ import annotations

import json

import orjson

#: The C scanner behind ``json.loads``, without its per-call wrapping (about 4x
#: less time for a small object); the same decoder settings as ``json.loads``.
_scan_once = json.JSONDecoder().scan_once
_LINE_SEPARATOR = "\u2028".encode()
_PARAGRAPH_SEPARATOR = "\u2029".encode()
#: The lead byte both separators' UTF-8 starts with: one ``memchr`` for it rules both out.
_SEPARATORS_LEAD_BYTE = _LINE_SEPARATOR[:1]


def loads(text: str):
    """``json.loads(text)``: the same values and errors, faster for a small document."""
    try:
        value, end = _scan_once(text, 0)
    except (StopIteration, TypeError):
        return json.loads(text)  # leading whitespace, bytes, or not JSON: json decides (and explains)
    if end != len(text):
        return json.loads(text)  # trailing whitespace or more
    return value


def loads_many(texts: list[str]) -> list:
    """``[loads(text) for text in texts]`` for texts that each hold one JSON document (as a
    database's JSON column does), in one scan of them joined as an array: for small
    documents each call's own overhead was about half the time.

    Anything that does not read back as exactly one value per text is decoded text by
    text, so errors are ``loads``' own.
    """
    joined = f"[{','.join(texts)}]"
    try:
        values, end = _scan_once(joined, 0)
    except (StopIteration, ValueError, TypeError, RecursionError):
        return [loads(text) for text in texts]
    if end != len(joined) or len(values) != len(texts):
        return [loads(text) for text in texts]
    return values


def dumps_like_drf(value) -> bytes:
    """``value`` as DRF's JSONRenderer writes it with chartr's settings (compact, UTF-8, no NaN,
    U+2028/U+2029 escaped), with orjson's float formatting (``1e16``, not ``1e+16``: the same number).

    ``orjson.Fragment`` values go out as the JSON text they hold.
    """
    try:
        body = orjson.dumps(value)
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits: only json can write it.
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    # Searching a 35 KB page for each three-byte separator took twice orjson's time to write it;
    # a one-byte search is a memchr, and a page without that byte (all of an ASCII one) has neither.
    if _SEPARATORS_LEAD_BYTE not in body:
        return body
    if _LINE_SEPARATOR in body:
        body = body.replace(_LINE_SEPARATOR, b"\\u2028")
    if _PARAGRAPH_SEPARATOR in body:
        body = body.replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
    return body
