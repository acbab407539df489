"""/api/v1/docs in a browser without a session: to the admin's login and back; programs keep their JSON 401."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.api import assert_error
from tokens.services import create_api_token

pytestmark = pytest.mark.django_db

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


def login_redirect_next(response) -> str:
    assert response.status_code == 302
    url = urlsplit(response["Location"])
    assert url.path == "/admin/login/"
    assert "Accept" in response["Vary"]
    (target,) = parse_qs(url.query)["next"]
    return target


def test_a_browser_without_a_session_is_sent_to_the_login_and_back():
    browser = Client(HTTP_ACCEPT=BROWSER_ACCEPT)
    assert login_redirect_next(browser.get("/api/v1/docs")) == "/api/v1/docs"
    assert login_redirect_next(browser.get("/api/v1/docs?script=")) == "/api/v1/docs?script="

    get_user_model().objects.create_user("operator", password="pw-for-tests", is_staff=True)
    form = browser.get("/admin/login/?next=/api/v1/docs")
    assert form.status_code == 200
    back = browser.post(
        "/admin/login/?next=/api/v1/docs", {"username": "operator", "password": "pw-for-tests", "next": "/api/v1/docs"}
    )
    assert back.status_code == 302 and back["Location"] == "/api/v1/docs"
    page = browser.get("/api/v1/docs")
    assert page.status_code == 200 and b"swagger-ui-bundle.js" in page.content


def test_a_browser_logged_in_without_staff_is_sent_to_the_login_too():
    browser = Client(HTTP_ACCEPT=BROWSER_ACCEPT)
    browser.force_login(get_user_model().objects.create_user("visitor", password="x"))
    assert login_redirect_next(browser.get("/api/v1/docs")) == "/api/v1/docs"


@pytest.mark.parametrize("accept", [None, "*/*", "application/json, */*;q=0.1", "application/json, text/html;q=0.5"])
def test_programs_keep_the_json_401(accept):
    client = Client() if accept is None else Client(HTTP_ACCEPT=accept)
    response = client.get("/api/v1/docs")
    assert_error(response, 401, "not_authenticated")
    assert "Accept" in response["Vary"]


def test_a_bad_token_from_a_browser_is_still_a_json_401():
    response = Client(HTTP_ACCEPT=BROWSER_ACCEPT).get("/api/v1/docs", HTTP_AUTHORIZATION="Bearer chartr_unknown")
    assert_error(response, 401, "not_authenticated")


def test_a_token_opens_the_page_whatever_it_accepts():
    _, raw = create_api_token(name="docs")
    response = Client(HTTP_ACCEPT=BROWSER_ACCEPT).get("/api/v1/docs", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200 and b"swagger-ui-bundle.js" in response.content


def test_the_schema_itself_stays_json_for_a_browser():
    assert_error(Client(HTTP_ACCEPT=BROWSER_ACCEPT).get("/api/v1/schema"), 401, "not_authenticated")
