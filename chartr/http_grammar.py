"""The grammar of an HTTP/1.x request head (RFC 9112) that chartr/connection_limits.py holds each request to.

A head that does not follow it is refused before uvicorn's parser (llhttp)
sees it, in the JSON envelope, so no request gets uvicorn's plain-text 400:

- the request line is ``method SP request-target SP HTTP-version``, each line
  ends in CRLF (llhttp refuses a bare LF, so chartr does too): else 400
  ``invalid``;
- the method is a token (RFC 9110 tchar): else 400; one of ``KNOWN_METHODS``
  (the methods llhttp reads: ``PROPFIND`` and ``TRACE`` reach chartr, whose
  views answer 405 ``method_not_allowed`` for what a path does not allow), any
  other token (``FOO``, a lower-case ``get``, ``CONNECT``, which would be a
  tunnel) is 501 ``not_implemented`` (RFC 9110, 15.6.2);
- the target is visible ASCII (0x21 to 0x7e; llhttp refuses the rest too)
  and a path, an absolute URI or ``*``: else 400;
- the version is ``HTTP/1.0`` or ``HTTP/1.1``; another ``HTTP/d.d`` is 505
  ``http_version_not_supported``, anything else 400;
- a field line is ``token ":" OWS value OWS`` with no control character but
  HTAB in the value; a line starting with SP or HTAB (obs-fold), a line
  without ``:`` or with whitespace before it is 400;
- ``Content-Length`` is one field of digits; ``Transfer-Encoding`` ends in
  ``chunked`` exactly once, is not sent with ``Content-Length`` nor in an
  HTTP/1.0 request (RFC 9112, 6.1 and 6.3): else 400; a transfer coding other
  than ``chunked`` (``gzip, chunked``) is 501, since nothing would decode it;
- a chunk-size line is hexadecimal digits (at most 64 bits) and extensions
  ``;name[=value]`` with no whitespace (llhttp refuses it), and a chunk's data
  ends in CRLF: else 400.

The line in progress is held back from uvicorn until it is complete and
checked (chartr/connection_limits.py), since llhttp refuses some bytes as soon
as it sees them.
"""

from __future__ import annotations

import re

from chartr.errors import HttpVersionNotSupported, MalformedRequest, Unimplemented

#: The methods llhttp (uvicorn's parser) reads, CONNECT aside: chartr's views answer them (405
#: where a path does not allow one); any other token is 501. tests/chartr/test_http_grammar.py
#: holds this list to httptools' own.
KNOWN_METHODS = frozenset(
    b"DELETE GET HEAD POST PUT OPTIONS TRACE COPY LOCK MKCOL MOVE PROPFIND PROPPATCH SEARCH UNLOCK BIND REBIND "
    b"UNBIND ACL REPORT MKACTIVITY CHECKOUT MERGE M-SEARCH NOTIFY SUBSCRIBE UNSUBSCRIBE PATCH PURGE MKCALENDAR "
    b"LINK UNLINK SOURCE QUERY".split()
)
#: The largest Content-Length or chunk size followed (llhttp's is 64 bits unsigned).
LARGEST_LENGTH = 2**63 - 1

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*"'
TOKEN = re.compile(_TOKEN)
TARGET = re.compile(rb"[\x21-\x7e]+")
VERSION = re.compile(rb"HTTP/[0-9]\.[0-9]")
FIELD_VALUE = re.compile(rb"[^\x00-\x08\x0a-\x1f\x7f]*")
DIGITS = re.compile(rb"[0-9]+")
#: Origin-form, absolute-form with an authority, or asterisk-form (RFC 9112, 3.2); llhttp reads these.
TARGET_FORM = re.compile(rb"/.*|\*|[A-Za-z]+://[A-Za-z0-9\-._~%!$&'()*+,;=:@\[\]]+(?:[/?#].*)?", re.S)
#: No whitespace around ``;`` and ``=``: llhttp refuses it (RFC 9112's BWS, which senders must not send).
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]+)(?:;" + _TOKEN + rb"(?:=(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*")

Refusal = tuple[type, str]


def _printable(data: bytes) -> str:
    return repr(data[:40])[2:-1]


def request_line_refusal(line: bytes) -> Refusal | None:
    """Why ``line`` (without its CRLF) is not a request line chartr serves, or None."""
    parts = line.split(b" ")
    if len(parts) != 3:
        return MalformedRequest, "The request line is not 'method SP request-target SP HTTP-version'."
    method, target, version = parts
    if not TOKEN.fullmatch(method):
        return MalformedRequest, f"The method '{_printable(method)}' is not a token."
    if not TARGET.fullmatch(target):
        return MalformedRequest, "The request target is empty or holds whitespace, control or non-ASCII bytes."
    if not TARGET_FORM.fullmatch(target):
        return MalformedRequest, "The request target is not a path, an absolute URI or '*'."
    if not VERSION.fullmatch(version):
        return MalformedRequest, f"'{_printable(version)}' is not an HTTP version."
    if version not in (b"HTTP/1.0", b"HTTP/1.1"):
        return HttpVersionNotSupported, f"{version.decode()} is not supported; send HTTP/1.1 or HTTP/1.0."
    if method not in KNOWN_METHODS:
        return Unimplemented, f"The method {_printable(method)} is not implemented."
    return None


def field(line: bytes) -> tuple[bytes, bytes] | Refusal:
    """A field line's lower-case name and value (without its leading OWS), or the refusal."""
    if line[:1] in (b" ", b"\t"):
        return MalformedRequest, "A header line starts with whitespace (obs-fold, RFC 9112 5.2)."
    name, colon, value = line.partition(b":")
    if not colon:
        return MalformedRequest, f"The header line '{_printable(line)}' has no ':'."
    if not TOKEN.fullmatch(name):
        return MalformedRequest, f"The header name '{_printable(name)}' is not a token."
    if not FIELD_VALUE.fullmatch(value):
        return MalformedRequest, f"The value of the header {name.decode()} holds a control character."
    return name.lower(), value.lstrip(b" \t")


def content_length(value: bytes, seen: int | None) -> int | Refusal:
    if seen is not None:
        return MalformedRequest, "The request has more than one Content-Length."
    value = value.rstrip(b" \t")
    if not DIGITS.fullmatch(value) or int(value) > LARGEST_LENGTH:
        return MalformedRequest, "Content-Length is not a whole number."
    return int(value)


def transfer_codings(value: bytes) -> list[bytes] | Refusal:
    """The lower-case coding names of one Transfer-Encoding field (empty list elements are ignored).

    A coding with parameters, a trailing HTAB or a trailing empty element is refused: ``chunked``
    has no parameters, and llhttp refuses the others."""
    codings = [element.strip(b" ").lower() for element in value.split(b",")]
    if codings and not codings[-1]:
        return MalformedRequest, "Transfer-Encoding ends in an empty element."
    codings = [coding for coding in codings if coding]
    if not codings or not all(TOKEN.fullmatch(coding) for coding in codings):
        return MalformedRequest, "Transfer-Encoding is not a list of transfer codings."
    return codings


def closes(version: bytes, connection: list[bytes]) -> bool:
    """Whether the connection closes after this request (RFC 9112, 9.3), by its version and Connection options."""
    if b"close" in connection:
        return True
    return version == b"HTTP/1.0" and b"keep-alive" not in connection


def framing_refusal(version: bytes, length: int | None, codings: list[bytes]) -> Refusal | None:
    """Why a head's framing fields (RFC 9112, 6) cannot frame its body, or None."""
    if not codings:
        return None
    if length is not None:
        return MalformedRequest, "The request has both Content-Length and Transfer-Encoding."
    if version == b"HTTP/1.0":
        return MalformedRequest, "An HTTP/1.0 request cannot have a Transfer-Encoding."
    if codings[-1] != b"chunked" or codings.count(b"chunked") > 1:
        return MalformedRequest, "Transfer-Encoding must end in chunked, once."
    if len(codings) > 1:
        others = ", ".join(c.decode() for c in codings[:-1])
        return Unimplemented, f"The transfer coding {others} is not implemented; send chunked alone."
    return None


def chunk_size(line: bytes) -> int | Refusal:
    match = CHUNK_SIZE.fullmatch(line)
    if match is None:
        return MalformedRequest, "A chunk-size line is not a hexadecimal size and extensions."
    size = int(match.group(1), 16)
    if size > LARGEST_LENGTH:
        return MalformedRequest, "A chunk size is too large."
    return size
