"""What chartr's log lines may not carry, and the filters that keep it out.

- ``RedactSecrets`` (on every handler: Django's in settings.LOGGING,
  gunicorn's and so uvicorn's through ``GunicornLogger``): API tokens and
  secret-looking query parameters (``?token=``, ``?access_token=``,
  ``?api_key=``, ``?auth=``, ...) become ``[redacted]``. The API refuses
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

import logging
import re
import weakref
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from gunicorn.glogging import Logger

REDACTED = "[redacted]"

# A query parameter whose name says it carries a credential, in a request
# line or URL: the name stays (it tells what was sent), the value goes.
SECRET_QUERY_PARAMETER = re.compile(
    r"(?P<name>[?&;][^=&;#\s\"'?]*?(?:token|key|auth|secret|passw|pwd|signature|credential|session|jwt|bearer)"
    r"[^=&;#\s\"'?]*=)[^&;#\s\"']*",
    re.IGNORECASE,
)
# An API token wherever it appears (tokens/services.py: "chartr_" + 43 URL-safe characters).
API_TOKEN = re.compile(r"chartr_[A-Za-z0-9_-]{40,}")


def redact(text: str) -> str:
    # Each pattern runs only on text that holds its first character or its prefix:
    # most lines (an access line without a query string) hold neither.
    if "?" in text or "&" in text or ";" in text:
        text = SECRET_QUERY_PARAMETER.sub(rf"\g<name>{REDACTED}", text)
    if "chartr_" in text:
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
            f'{client_address(scope)} - "{scope["method"]} {path_with_query_string(scope)} '
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
        and formats_the_message_alone(handler.formatter)
        and all(isinstance(entry, RedactSecrets) for entry in handler.filters)
    )


#: Formatter -> whether it writes a record's message and nothing else, found once per formatter.
_message_alone: weakref.WeakKeyDictionary[logging.Formatter, bool] = weakref.WeakKeyDictionary()


def formats_the_message_alone(formatter: logging.Formatter) -> bool:
    """Whether ``formatter`` writes a record as its message unchanged (``%(message)s``)."""
    known = _message_alone.get(formatter)
    if known is None:
        probe = logging.LogRecord(
            "uvicorn.access", logging.INFO, "", 0, '127.0.0.1:1 - "GET / HTTP/1.1" 200', None, None
        )
        known = _message_alone[formatter] = formatter.format(probe) == probe.getMessage()
    return known


def client_address(scope: dict[str, Any]) -> str:
    """The client's ``host:port`` as uvicorn's access log writes it ("" when the server knows none)."""
    client = scope.get("client")
    return "%s:%d" % tuple(client) if client else ""  # noqa: UP031 - the port as an integer, as uvicorn writes it


def path_with_query_string(scope: dict[str, Any]) -> str:
    """The request's path and query as sent, as uvicorn's access log writes them (``"`` escaped)."""
    raw_path = scope.get("raw_path")  # optional in ASGI
    path = raw_path.decode("latin1") if raw_path is not None else quote(scope["path"])
    if scope["query_string"]:
        path = f"{path}?{scope['query_string'].decode('ascii')}"
    return path.replace('"', "%22")


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
