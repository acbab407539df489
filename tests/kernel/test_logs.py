"""kernel/logs.py: what the filters take out of a log record, and where they are installed.

The real server's log is checked end to end in tests/process/test_server_logs.py.
"""

from __future__ import annotations

import io
import logging
import sys
import urllib.parse

import pytest
from django.conf import settings
from gunicorn.config import Config

from kernel.logs import AccessLog, GunicornLogger, RedactSecrets, WithoutTraceback, redact

TOKEN = "chartr_" + "A1b2-C3d4_" * 5
TICKET = "chartr_st_" + "Z9y8-X7w6_" * 5


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '127.0.0.1:5 - "GET /api/v1/projects?token=abc HTTP/1.1" 400',
            '127.0.0.1:5 - "GET /api/v1/projects?token=[redacted] HTTP/1.1" 400',
        ),
        ("/p?limit=5&access_token=abc&cursor=x", "/p?limit=5&access_token=[redacted]&cursor=x"),
        ("/p?API_KEY=abc;auth=def#frag", "/p?API_KEY=[redacted];auth=[redacted]#frag"),
        ("/p?x-client-secret=abc&password=p&sig=s", "/p?x-client-secret=[redacted]&password=[redacted]&sig=s"),
        ("/p?access%5Ftoken=abc%26def", "/p?access%5Ftoken=[redacted]"),
        (f"Not Found: /api/v1/{TOKEN}", "Not Found: /api/v1/chartr_[redacted]"),
        # Percent-encoded: a server decodes these before it reads them, so the log must not keep them.
        ("/p?%74oken=abc&x=1", "/p?%74oken=[redacted]&x=1"),
        ("/p?%54%4F%4B%45%4E=abc", "/p?%54%4F%4B%45%4E=[redacted]"),
        ("/p?x=1&api%5fkey%3Dabc", "/p?x=1&api%5fkey%3D[redacted]"),
        ("/m%3Fsession%3Dabc HTTP/1.1", "/m%3Fsession%3D[redacted] HTTP/1.1"),
        (f"/api/v1/{TOKEN.replace('_', '%5F')}/x", "/api/v1/chartr_[redacted]/x"),
        ("/q?q=" + "".join(f"%{ord(c):02x}" for c in TOKEN), "/q?q=chartr_[redacted]"),
        (
            '127.0.0.1:5 - "GET /api/v1/agents/a/timeline/stream?after_seq=4&ticket=abc HTTP/1.1" 200',
            '127.0.0.1:5 - "GET /api/v1/agents/a/timeline/stream?after_seq=4&ticket=[redacted] HTTP/1.1" 200',
        ),
        (f"/s?ticket={TICKET}&after_seq=4", "/s?ticket=[redacted]&after_seq=4"),
        (f"minted {TICKET}", "minted chartr_[redacted]"),
        ("/p?limit=5&cursor=abc", "/p?limit=5&cursor=abc"),
        ("/p?q=chartr%5Fshort%20name&k=%41", "/p?q=chartr%5Fshort%20name&k=%41"),
        ("database chartr_w12c is ready", "database chartr_w12c is ready"),
    ],
)
def test_redact(line, expected):
    assert redact(line) == expected


def record(msg, *args, exc_info=None) -> logging.LogRecord:
    return logging.LogRecord("t", logging.WARNING, __file__, 1, msg, args or None, exc_info)


def test_redact_secrets_rewrites_the_formatted_message_and_the_traceback():
    entry = record("%s - %s", "GET", f"/p?token={TOKEN}")
    assert RedactSecrets().filter(entry)
    assert entry.getMessage() == "GET - /p?token=[redacted]"
    try:
        raise ValueError(f"bad url /p?api_key=k&x={TOKEN}")
    except ValueError:
        entry = record("failed", exc_info=sys.exc_info())
    RedactSecrets().filter(entry)
    text = logging.Formatter().format(entry)
    assert "api_key=[redacted]" in text and TOKEN not in text and "Traceback" in text
    # gunicorn's access log formats from a dict of atoms
    entry = logging.LogRecord("t", logging.INFO, __file__, 1, "%(r)s", ({"r": f"GET /?auth={TOKEN}"},), None)
    RedactSecrets().filter(entry)
    assert entry.getMessage() == "GET /?auth=[redacted]"


def test_without_traceback_keeps_the_message_only():
    try:
        raise ValueError("boom")
    except ValueError:
        entry = record("Invalid HTTP_HOST header: %r.", "evil", exc_info=sys.exc_info())
    WithoutTraceback().filter(entry)
    assert logging.Formatter().format(entry) == "Invalid HTTP_HOST header: 'evil'."


def test_gunicorn_and_so_uvicorn_handlers_redact():
    config = Config()
    config.set("accesslog", "-")
    logger = GunicornLogger(config)
    handlers = [*logger.error_log.handlers, *logger.access_log.handlers]
    assert handlers and all(any(isinstance(f, RedactSecrets) for f in handler.filters) for handler in handlers)
    logger.setup(config)  # reopening adds no second filter
    assert all(sum(isinstance(f, RedactSecrets) for f in handler.filters) == 1 for handler in handlers)


def test_every_django_handler_redacts_and_a_bad_host_logs_no_traceback():
    for name, handler in settings.LOGGING["handlers"].items():
        assert "redact_secrets" in handler.get("filters", []), name
    assert "without_traceback" in settings.LOGGING["loggers"]["django.security.DisallowedHost"]["filters"]
    root_handlers = logging.getLogger().handlers
    assert any(isinstance(f, RedactSecrets) for handler in root_handlers for f in handler.filters)


@pytest.mark.django_db
def test_a_bad_host_is_one_record_without_a_traceback_and_a_json_400_under_api(client, caplog):
    with caplog.at_level(logging.INFO):
        response = client.get("/api/v1/projects", headers={"host": "evil.example"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid" and "Host" in response.json()["error"]["message"]
    mentions = [entry for entry in caplog.records if "evil.example" in entry.getMessage()]
    assert len(mentions) == 1 and mentions[0].exc_info is None


SCOPES = [
    {
        "client": ("127.0.0.1", 5),
        "method": "GET",
        "path": "/api/v1/projects",
        "raw_path": b"/api/v1/projects",
        "query_string": b"",
        "http_version": "1.1",
    },
    {
        "client": ("10.0.0.9", 41),
        "method": "POST",
        "path": "/a b/é",
        "raw_path": b"/a%20b/%C3%A9",
        "query_string": b"x=1",
        "http_version": "1.0",
    },
    {
        "client": None,
        "method": "GET",
        "path": "/p",
        "raw_path": b"/p",
        "query_string": f"auth=1&t={TOKEN}".encode(),
        "http_version": "1.1",
    },
]
# Every scope a server hands over carries the path as the client sent it (uvicorn's access log writes that).
for _scope in SCOPES:
    _scope["raw_path"] = urllib.parse.quote(_scope["path"]).encode()


def gunicorn_access_handler(stream) -> logging.Handler:
    """A handler as ``GunicornLogger`` sets one up for ``accesslog = "-"``, on ``stream``."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(GunicornLogger.access_fmt))
    handler.addFilter(RedactSecrets())
    return handler


def test_the_access_log_writes_the_line_uvicorns_logger_writes_redacted_in_one_write():
    from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

    ours, uvicorns = io.StringIO(), io.StringIO()
    access_log = AccessLog()
    access_log.write_to([gunicorn_access_handler(ours)])
    uvicorn_logger = logging.getLogger("test.uvicorn.access")
    uvicorn_logger.handlers, uvicorn_logger.propagate = [gunicorn_access_handler(uvicorns)], False
    for status, scope in enumerate(SCOPES, start=200):
        access_log.response(scope, status)
        uvicorn_logger.info(
            '%s - "%s %s HTTP/%s" %d',
            get_client_addr(scope),
            scope["method"],
            get_path_with_query_string(scope),
            scope["http_version"],
            status,
        )
    assert ours.getvalue() == uvicorns.getvalue()
    assert ours.getvalue().splitlines()[2] == ' - "GET /p?auth=[redacted]&t=chartr_[redacted] HTTP/1.1" 202'


def test_the_access_log_writes_to_a_plain_stream_itself_and_hands_any_other_handler_a_record():
    plain = gunicorn_access_handler(io.StringIO())
    plain.handle = None  # the plain stream is written to directly, never through handle()
    formatted = logging.StreamHandler(io.StringIO())
    formatted.setFormatter(logging.Formatter("access: %(name)s %(message)s"))
    access_log = AccessLog()
    access_log.write_to([plain, formatted])
    access_log.response(SCOPES[0], 204)
    assert plain.stream.getvalue() == '127.0.0.1:5 - "GET /api/v1/projects HTTP/1.1" 204\n'
    assert formatted.stream.getvalue() == 'access: uvicorn.access 127.0.0.1:5 - "GET /api/v1/projects HTTP/1.1" 204\n'


def test_the_access_log_writes_nothing_until_it_is_handed_handlers():
    handler = gunicorn_access_handler(io.StringIO())
    access_log = AccessLog()
    access_log.response(SCOPES[0], 200)
    handlers = []
    access_log.write_to(handlers)
    access_log.response(SCOPES[0], 200)
    handlers.append(handler)  # gunicorn adds (and reopens) handlers in place
    access_log.response(SCOPES[0], 201)
    assert handler.stream.getvalue() == '127.0.0.1:5 - "GET /api/v1/projects HTTP/1.1" 201\n'
