"""End to end in a real browser against a real server process.

Debian's chromium driven by Playwright (never ``playwright install``): log in,
create a project and a workspace, archive the project through the
confirmation page, check the workspace shows as archived, and save a
screenshot of the dashboard to ``test-artifacts/dashboard.png``.

The server runs with DEBUG off and the static files collected, as deployed,
so the screenshot also shows that the admin is styled.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import skip_or_fail

pytestmark = [pytest.mark.browser, pytest.mark.process]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SERVER_START_TIMEOUT = 60
PASSWORD = "browser-" + secrets.token_hex(8)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict, *args: str, timeout: int = 180) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"


class ScratchPostgres:
    """A throwaway database on the PostgreSQL server the suite runs against, when it runs against one."""

    def __init__(self):
        settings = connection.settings_dict
        self.name = f"chartr_browser_{secrets.token_hex(4)}"
        self.params = {
            "host": settings.get("HOST") or "127.0.0.1",
            "port": settings.get("PORT") or 5432,
            "user": settings.get("USER") or "postgres",
            "password": settings.get("PASSWORD") or None,
        }

    def _execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(dbname="postgres", autocommit=True, **self.params) as conn:
            conn.execute(sql)

    def create(self) -> str:
        self._execute(f'CREATE DATABASE "{self.name}"')
        p = self.params
        auth = p["user"] + (f":{p['password']}" if p["password"] else "")
        return f"postgres://{auth}@{p['host']}:{p['port']}/{self.name}"

    def drop(self) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture
def server(tmp_path):
    """A migrated chartr with a superuser, served by a real process on a free port."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CHARTR_SECRET_KEY")}
    env.update(
        CHARTR_DATA_DIR=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        CHARTR_STATIC_ROOT=str(tmp_path / "static"),
        CHARTR_DEBUG="0",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
    )
    scratch = None
    if connection.vendor == "postgresql":
        scratch = ScratchPostgres()
        env["DATABASE_URL"] = scratch.create()
    process = None
    log_path = tmp_path / "server.log"
    try:
        manage(env, "migrate", "--noinput")
        manage(env, "collectstatic", "--noinput")
        manage(env, "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com")
        port = free_port()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "runserver", "--noreload", f"127.0.0.1:{port}"],
                env=env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited with {process.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{base_url}/admin/login/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer within {SERVER_START_TIMEOUT}s:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield base_url
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if scratch is not None:
            scratch.drop()


@pytest.fixture
def browser_page():
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        skip_or_fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()


def test_operator_archives_a_project_in_a_real_browser(browser_page, server):
    from playwright.sync_api import expect

    page = browser_page

    # log in
    page.goto(f"{server}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#chartr-dashboard")).to_be_visible()
    # the admin is styled with DEBUG off: its stylesheet was served
    css = page.request.get(server + page.locator("link[rel=stylesheet]").first.get_attribute("href"))
    assert css.ok and "text/css" in css.headers["content-type"], "the admin's CSS is served"
    header_colour = page.evaluate("getComputedStyle(document.querySelector('#header')).backgroundColor")
    assert header_colour not in ("", "rgba(0, 0, 0, 0)", "transparent")

    # create a project and a workspace in it
    page.goto(f"{server}/admin/registry/project/add/")
    page.fill("#id_directory", "/srv/browser/chartr")
    page.select_option("#id_kind", "git")
    page.fill("#id_display_name", "Browser project")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")

    page.goto(f"{server}/admin/registry/workspace/add/")
    page.select_option("#id_project", label="Browser project (/srv/browser/chartr)")
    page.fill("#id_directory", "/srv/browser/chartr-feature")
    page.select_option("#id_kind", "worktree")
    page.fill("#id_branch", "feature")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")

    # and a running agent in it, so the confirmation has something running to warn about
    page.goto(f"{server}/admin/snapshots/agentsnapshot/add/")
    page.select_option("#id_workspace", label="chartr-feature (/srv/browser/chartr-feature)")
    page.fill("#id_agent_id", "browser-agent")
    page.fill("#id_provider", "claude")
    page.select_option("#id_lifecycle", "running")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")

    # archive the project through its change page's button and the confirmation page
    page.goto(f"{server}/admin/registry/project/")
    page.click("text=Browser project")
    page.click("#archive-button")
    expect(page.locator(".confirmation-summary")).to_contain_text(
        "Archiving 1 project also archives 1 workspace and 1 agent, 1 of them running."
    )
    expect(page.locator(".messagelist .warning")).to_contain_text("1 agent is running; archiving closes them.")
    page.click("#confirm-button")
    expect(page.locator(".messagelist .success")).to_contain_text(
        "Archived 1 project; 1 workspace and 1 agent, 1 of them running."
    )
    expect(page.locator("#unarchive-button")).to_be_visible()

    # the workspace now shows as archived, read-only with only Unarchive left
    page.goto(f"{server}/admin/registry/workspace/?archived=yes")
    expect(page.locator("#result_list")).to_contain_text("/srv/browser/chartr-feature")
    page.click("text=chartr-feature")
    expect(page.locator(".archived-note")).to_contain_text("Archived")
    expect(page.locator("#unarchive-button")).to_be_visible()
    expect(page.locator("input[name=display_name]")).to_have_count(0)

    # the dashboard counts it
    page.goto(f"{server}/admin/")
    expect(page.locator("#dash-projects")).to_contain_text("1 archived")
    expect(page.locator("#dash-workspaces")).to_contain_text("1 archived")
    expect(page.locator("#dash-agents")).to_contain_text("1 archived")
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "dashboard.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 10_000
