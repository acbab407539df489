"""Refusals of the server itself, given before a request reaches a view (chartr/connection_limits.py,
chartr/serving.py). None is an operation's answer, so the OpenAPI document leaves them to docs/api.md."""

from __future__ import annotations

from kernel.errors import ChartrError


class ServerRefusal(ChartrError):
    in_api = False
    #: The reason phrase of the status line the server writes itself.
    reason = ""


class MalformedRequest(ServerRefusal):
    """A request head that is not HTTP/1.x (RFC 9112), or whose body's framing cannot be read."""

    code = "invalid"
    status = 400
    reason = "Bad Request"


class RequestTimeout(ServerRefusal):
    """The request's headers or body did not arrive in time; the connection is closed."""

    code = "request_timeout"
    status = 408
    reason = "Request Timeout"


class UriTooLong(ServerRefusal):
    """The request line is longer than the server's limit."""

    code = "uri_too_long"
    status = 414
    reason = "URI Too Long"


class HeadersTooLarge(ServerRefusal):
    """Too many header fields, one too large, or all of them together too large."""

    code = "headers_too_large"
    status = 431
    reason = "Request Header Fields Too Large"


class Unimplemented(ServerRefusal):
    """A method, or a transfer coding, the server does not implement (RFC 9110, 15.6.2)."""

    code = "not_implemented"
    status = 501
    reason = "Not Implemented"


class HttpVersionNotSupported(ServerRefusal):
    """An HTTP version other than 1.0 and 1.1 (RFC 9110, 15.6.6)."""

    code = "http_version_not_supported"
    status = 505
    reason = "HTTP Version Not Supported"


class TooManyConnections(ServerRefusal):
    """The worker holds as many connections as it may; retry after `Retry-After` seconds."""

    code = "too_many_connections"
    status = 503
    reason = "Service Unavailable"
    retry_after = 1
