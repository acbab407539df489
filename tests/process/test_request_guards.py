"""Two guards through a real server, on this run's database: the fleet search names a filter that
can match nothing (400), and an admin password spray from one address locks that address (429)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.process.live_support import ServerProcess

pytestmark = [pytest.mark.process, pytest.mark.timeout(120)]

ADMIN_SCRIPT = """
import json, sys
from django.contrib.auth import get_user_model
get_user_model().objects.create_superuser(username="boss", password="right-password", email="")
print("RESULT {}")
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    server = ServerProcess(tmp_path, database=scratch_db(migrated=True), env={"CHARTR_ADMIN_LOGIN_FAILURE_LIMIT": "3"})
    server.token = server.setup(["agent-g"])["token"]
    server.run_python(ADMIN_SCRIPT, {})
    server.start()
    yield server
    server.stop()


#: Filters that can match nothing, each with the parameter its 400 names.
NOTHING_TO_MATCH = [
    ({"project_id": 10**12}, "project_id"),
    ({"workspace_id": 10**12}, "workspace_id"),
    ({"since": "2026-03-01T12:00:00Z", "until": "2026-03-01T12:00:00Z"}, "until"),
    ({"since": "2026-03-01T12:00:00Z", "until": "2026-03-01T11:00:00Z"}, "until"),
]


def test_a_search_filter_that_can_match_nothing_is_a_400_naming_it(server):
    with httpx.Client(headers={"Authorization": f"Bearer {server.token}"}) as client:
        for params, field in NOTHING_TO_MATCH:
            response = client.get(server.url("/api/v1/search"), params={"q": "otter", **params})
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert (error["code"], list(error["fields"])) == ("invalid", [field]), params
        assert client.get(server.url("/api/v1/search"), params={"q": "otter"}).status_code == 200


def log_in(client: httpx.Client, server: ServerProcess, username: str, password: str) -> httpx.Response:
    page = client.get(server.url("/admin/login/"))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    return client.post(
        server.url("/admin/login/?next=/admin/"),
        data={"username": username, "password": password, "csrfmiddlewaretoken": csrf},
        headers={"Referer": server.url("/admin/login/")},
    )


def test_a_password_spray_from_one_address_locks_that_address(server):
    with httpx.Client() as client:
        answers = [log_in(client, server, name, "guess").status_code for name in ("al", "bo", "cy")]
        assert answers == [200, 200, 429]
        # Even the right password of a user name the spray never tried.
        assert log_in(client, server, "boss", "right-password").status_code == 429
