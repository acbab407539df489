"""chartr/logs.py: what the filters take out of a log record, and where they are installed.

The real server's log is checked end to end in tests/process/test_server_logs.py.
"""

from __future__ import annotations

import logging
import sys

import pytest
from django.conf import settings
from gunicorn.config import Config

from chartr.logs import GunicornLogger, RedactSecrets, WithoutTraceback, redact

TOKEN = "chartr_" + "A1b2-C3d4_" * 5


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
        ("/p?limit=5&cursor=abc", "/p?limit=5&cursor=abc"),
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
