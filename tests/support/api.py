from __future__ import annotations

import io
from urllib.parse import unquote

import pytest
from django.core import signals
from django.db import close_old_connections
from django.urls import get_script_prefix, reverse
from rest_framework.test import APIClient

from tokens.services import create_api_token


def stream_path() -> str:
    """The live stream's path template in the API document, from timeline/urls.py (its only spelling)."""
    path = reverse("timeline-stream", kwargs={"agent_id": "{agent_id}"}).removeprefix(get_script_prefix())
    return "/" + unquote(path)


def client_with(raw_token: str | None) -> APIClient:
    client = APIClient()
    if raw_token:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_token}")
    return client


@pytest.fixture
def token(db):
    return create_api_token(name="test client")


@pytest.fixture
def api(token) -> APIClient:
    return client_with(token[1])


@pytest.fixture
def read_only_api(db) -> APIClient:
    return client_with(create_api_token(name="read only", read_only=True)[1])


@pytest.fixture
def anon(db) -> APIClient:
    return APIClient()


def assert_error(response, status: int, code: str, *, fields: list[str] | None = None) -> dict:
    """The error contract: status, JSON envelope, stable code, readable message, fields only for 400s."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    if fields is not None:
        assert sorted(error["fields"]) == sorted(fields), error
        assert all(isinstance(m, list) and all(isinstance(x, str) for x in m) for m in error["fields"].values())
    elif status != 400:
        assert "fields" not in error
    assert b"Traceback" not in response.content
    return error


@pytest.fixture(autouse=True)
def static_files_without_collectstatic(settings):
    """Production serves collected, hashed assets (make serve runs collectstatic);
    tests resolve them from the installed apps instead of collecting 30 MB each run."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True


@pytest.fixture
def wsgi_keeps_test_connection():
    """A WSGI handler called in the test's process would close the test's own connection
    mid-transaction on request_started/request_finished, as a server rightly does between requests."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def wsgi_answer(app, method: str, path: str, *, body: bytes = b"", query: str = "", headers=None, content_type=None):
    """Status, sorted headers and body of one call to the WSGI ``app``."""
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": ("application/json" if body else "") if content_type is None else content_type,
        "HTTP_HOST": "127.0.0.1",
    }
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    started = {}

    def start_response(status, response_headers, exc_info=None):
        started["status"] = status
        started["headers"] = sorted(response_headers)

    response = app(environ, start_response)
    try:
        content = b"".join(response)
    finally:
        response.close()
    return started["status"], started["headers"], content
