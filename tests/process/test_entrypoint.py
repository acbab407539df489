"""The entrypoint, run for real outside a container: migrate, first admin, gunicorn, state across restarts."""

from __future__ import annotations

import re
import stat
import subprocess

import httpx
import pytest

from tests.support.processes import ENTRYPOINT, isolated_env, manage, start_server

pytestmark = pytest.mark.process

CREATED = re.compile(r"Created superuser 'admin' with password: (\S+)")
PROJECT_DIRECTORY = "/srv/persistence-check"


def admin_login(server, password: str) -> httpx.Response:
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        page = client.get("/admin/login/")
        assert page.status_code == 200
        return client.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "admin",
                "password": password,
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
                "next": "/admin/",
            },
        )


def api_token(env: dict[str, str]) -> str:
    done = manage("create_api_token", "persistence-check", env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def api(server, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=10, headers={"Authorization": f"Bearer {token}"})


def test_serves_with_gunicorn_and_keeps_state_across_a_restart(tmp_path):
    env = isolated_env(tmp_path)
    config = tmp_path / "config" / "chartr"

    server = start_server(env, tmp_path / "first.log")
    try:
        assert server.get("/readyz").json() == {"status": "ready"}
        assert "chartr.workers.DrainingUvicornWorker" in server.output

        # DEBUG is off, and whitenoise serves the collected, hashed admin CSS.
        assert "Using the URLconf" not in server.get("/no-such-page").text
        plain_css = server.get("/static/admin/css/base.css")
        assert plain_css.status_code == 200 and plain_css.headers["content-type"].startswith("text/css")
        login_page = server.get("/admin/login/").text
        hashed = re.search(r'href="(/static/admin/css/base\.[0-9a-f]{12}\.css)"', login_page)
        assert hashed, login_page[:2000]
        css = server.get(hashed[1])
        assert css.status_code == 200 and "max-age=315360000" in css.headers["cache-control"]
        assert "body" in css.text

        password = CREATED.search(server.output)[1]
        password_file = config / "initial-admin-password"
        assert password_file.read_text().strip() == password
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600

        token = api_token(env)
        with api(server, token) as client:
            created = client.post("/api/v1/projects", json={"directory": PROJECT_DIRECTORY, "kind": "git"})
        assert created.status_code == 201, created.text
        project = created.json()
        secret_key = (config / "secret_key").read_text()
    finally:
        assert server.stop() == 0, server.output
    assert "Shutting down: Master" in server.output

    assert "Collected static files" in server.output

    server = start_server(env, tmp_path / "second.log")
    try:
        assert "Static files unchanged since the last collect." in server.output
        assert "Created superuser" not in server.output
        assert "No migrations to apply" in server.output
        assert (config / "secret_key").read_text() == secret_key
        assert password_file.read_text().strip() == password
        # The printed password still logs in: the account was left alone.
        assert admin_login(server, password).status_code == 302
        with api(server, token) as client:
            again = client.get(f"/api/v1/projects/{project['id']}")
            by_directory = client.get("/api/v1/projects", params={"directory": PROJECT_DIRECTORY})
        assert again.status_code == 200 and again.json() == project
        assert [p["id"] for p in by_directory.json()["results"]] == [project["id"]]
        assert server.get(hashed[1]).status_code == 200
    finally:
        assert server.stop() == 0, server.output
    assert not any((tmp_path / "home").iterdir()), "the server wrote into $HOME"


def test_manage_passthrough_runs_a_management_command(tmp_path):
    done = subprocess.run(
        [str(ENTRYPOINT), "manage", "check"], env=isolated_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout
    assert not (tmp_path / "data" / "chartr.sqlite3").exists(), "manage must not migrate first"
