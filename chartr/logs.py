"""What chartr's log lines may not carry, and the filters that keep it out.

- ``RedactSecrets`` (on every handler: Django's in settings.LOGGING,
  gunicorn's and so uvicorn's through ``GunicornLogger``): API tokens and
  secret-looking query parameters (``?token=``, ``?access_token=``,
  ``?api_key=``, ``?auth=``, ...) become ``[redacted]``. The API refuses
  tokens in a query string, but the access log writes the request line
  before anyone has refused anything, and a token in a log file is a leaked
  token.
- ``WithoutTraceback``: a record keeps its message and loses its traceback.
  Django logs every request with a disallowed ``Host`` with the full stack of
  where the header was read; that is noise anyone on the network can write
  into the log, one line says all there is to say.
"""

from __future__ import annotations

import logging
import re

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
    text = SECRET_QUERY_PARAMETER.sub(rf"\g<name>{REDACTED}", text)
    return API_TOKEN.sub(f"chartr_{REDACTED}", text)


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
