"""What chartr's log lines may not carry, and the filters that keep it out.

- ``RedactSecrets`` (on every handler: Django's in settings.LOGGING,
  gunicorn's and so uvicorn's through ``GunicornLogger``): API tokens, stream
  tickets and secret-looking query parameters (``?ticket=``, ``?token=``, ``?access_token=``,
  ``?api_key=``, ``?auth=``, ...) become ``[redacted]``, written plainly or
  percent-encoded (``?%74oken=``, ``chartr%5F...``: the server decodes both
  before it reads them). The API refuses
  tokens in a query string, but the access log writes the request line
  before anyone has refused anything, and a token in a log file is a leaked
  token.
- ``AccessLog``: the access log's line for each response, the line uvicorn
  writes, written by chartr's request wrapper (chartr/serving.py) when the
  worker hands it the access log (chartr/workers.py).
- ``WithoutTraceback``: a record keeps its message and loses its traceback.
  Django logs every request with a disallowed ``Host`` with the full stack of
  where the header was read; that is noise anyone on the network can write
  into the log, one line says all there is to say.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from typing import Any

from gunicorn.glogging import Logger

REDACTED = "[redacted]"


def spelled(word: str) -> str:
    """A pattern for ``word`` with any of its characters percent-encoded (``token``, ``%74oken``, ``%54OKEN``).

    A server decodes the path and the query before it reads them, so ``%74oken=``
    and ``access%5Ftoken=`` carry a token as surely as ``token=`` does.
    """
    return "".join(f"(?:{re.escape(c)}|%{ord(c.lower()):02X}|%{ord(c.upper()):02X})" for c in word)


SECRET_NAMES = (
    "token",
    "ticket",
    "key",
    "auth",
    "secret",
    "passw",
    "pwd",
    "signature",
    "credential",
    "session",
    "jwt",
    "bearer",
)
# A query parameter whose name says it carries a credential, in a request
# line or URL: the name stays (it tells what was sent), the value goes. The
# separators may come percent-encoded too (``%3Ftoken%3D`` in a path).
SECRET_QUERY_PARAMETER = re.compile(
    rf"(?P<name>(?:[?&;]|%3F|%26|%3B)[^=&;#\s\"'?]*?(?:{'|'.join(spelled(name) for name in SECRET_NAMES)})"
    r"[^=&;#\s\"'?]*?(?:=|%3D))[^&;#\s\"']*",
    re.IGNORECASE,
)
# A character of a token (URL-safe base64), as itself or percent-encoded (hex digits of either case).
TOKEN_CHARACTER = r"(?:[A-Za-z0-9_-]|(?i:%(?:2D|3[0-9]|4[1-9A-F]|5[0-9A]|5F|6[1-9A-F]|7[0-9A])))"
# An API token or a stream ticket wherever it appears (tokens/services.py: "chartr_" + 43
# URL-safe characters; a ticket "chartr_st_" + 43), any of its characters percent-encoded or not.
API_TOKEN = re.compile("".join(f"(?:{c}|(?i:%{ord(c):02X}))" for c in "chartr_") + TOKEN_CHARACTER + "{40,}")


def redact(text: str) -> str:
    # Each pattern runs only on text that holds its first character or its prefix:
    # most lines (an access line without a query string or an escape) hold neither.
    escaped = "%" in text
    if escaped or "?" in text or "&" in text or ";" in text:
        text = SECRET_QUERY_PARAMETER.sub(rf"\g<name>{REDACTED}", text)
    if escaped or "chartr_" in text:
        text = API_TOKEN.sub(f"chartr_{REDACTED}", text)
    return text


class RedactSecrets(logging.Filter):
    """Rewrite a record's message (and traceback) with the secrets in it redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class WithoutTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


class GunicornLogger(Logger):
    """gunicorn's logger with ``RedactSecrets`` on its handlers.

    uvicorn's worker hands these same handlers to the ``uvicorn.access`` and
    ``uvicorn.error`` loggers, so their lines (the access log's request line
    with its query string) are redacted too.
    """

    def setup(self, cfg) -> None:
        super().setup(cfg)
        for handler in (*self.error_log.handlers, *self.access_log.handlers):
            if not any(isinstance(existing, RedactSecrets) for existing in handler.filters):
                handler.addFilter(RedactSecrets())


class AccessLog:
    """One line per response, as uvicorn's access log writes it, at a fraction of its cost.

    uvicorn logs each response through ``Logger.info``: the caller's frame is
    looked up, a record built, both regular expressions of ``RedactSecrets``
    run on every handler, and the line formatted; about a twentieth of the
    worker's CPU for a small API call (docs/benchmarks.md). Here the line is
    built once, redacted once, and written straight to each handler that is a
    plain stream (gunicorn's ``-`` or a file, formatted as ``%(message)s``),
    under the handler's lock, reading its stream each time so gunicorn's
    reopening on SIGUSR1 still holds. Nothing is buffered: each line is
    flushed as it is written, so none is lost on a crash. Any other handler
    (syslog, a custom formatter or filter) gets a record through ``handle``.

    Off until ``write_to`` hands it handlers: under another server that server
    writes its own access log, and this one must not write a second line.
    """

    def __init__(self) -> None:
        self.handlers: Sequence[logging.Handler] = ()

    def write_to(self, handlers: Sequence[logging.Handler]) -> None:
        """Write to ``handlers`` (a live list: handlers gunicorn swaps in later are used)."""
        self.handlers = handlers

    def response(self, scope: dict[str, Any], status: int) -> None:
        if not self.handlers:
            return
        line = redact(
            f'{client_address(scope)} - "{scope["method"]} {request_target(scope)} '
            f'HTTP/{scope["http_version"]}" {status}'
        )
        for handler in self.handlers:
            if not (is_plain_stream(handler) and write_line(handler, line)):
                handler.handle(logging.LogRecord("uvicorn.access", logging.INFO, "", 0, line, None, None))


def is_plain_stream(handler: logging.Handler) -> bool:
    """Whether ``handler`` would write a redacted INFO line unchanged, plus its terminator, to its stream."""
    return (
        type(handler) in (logging.StreamHandler, logging.FileHandler)
        and handler.level <= logging.INFO
        and handler.formatter is not None
        and formats_message_only(handler.formatter)
        and all(isinstance(entry, RedactSecrets) for entry in handler.filters)
    )


def client_address(scope: dict[str, Any]) -> str:
    """``host:port`` of the client, as uvicorn's access log writes it; empty when unknown."""
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else ""


def request_target(scope: dict[str, Any]) -> str:
    """The path as the client sent it, with its query string; a ``"`` escaped, as uvicorn does."""
    raw_path = scope.get("raw_path") or scope["path"].encode()
    target = raw_path.decode("latin1")
    if scope["query_string"]:
        target = f"{target}?{scope['query_string'].decode('ascii')}"
    return target.replace('"', "%22")


@functools.lru_cache(maxsize=16)
def formats_message_only(formatter: logging.Formatter) -> bool:
    """Whether ``formatter`` renders a record as its bare message (gunicorn's access format ``%(message)s``)."""
    probe = logging.LogRecord("chartr.probe", logging.INFO, "", 0, "probe", None, None)
    return formatter.format(probe) == probe.getMessage()


def write_line(handler: logging.StreamHandler, line: str) -> bool:
    """Write ``line`` to the handler's stream; False (nothing written) when it has none or the write failed."""
    with handler.lock:
        stream = handler.stream
        if stream is None:
            return False
        try:
            stream.write(line + handler.terminator)
            stream.flush()
        except Exception:
            return False
    return True


#: The worker's access log (chartr/workers.py enables it; chartr/asgi.py's wrapper writes to it).
access_log = AccessLog()
