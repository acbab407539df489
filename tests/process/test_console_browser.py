"""The operator's console in a real browser against a real server (the entrypoint: gunicorn + uvicorn, DEBUG off).

Debian's chromium driven by Playwright (never ``playwright install``), at a
laptop's 1440 x 900 and a phone's 390 x 844, with no console error on any
page: restore a data snapshot from the admin (the preview, the confirmation,
still logged in after it). Screenshots go to ``test-artifacts/`` (listed in
docs/operations.md, "Screenshots").
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import skip_or_fail
from tests.process.test_admin_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, PASSWORD, SERVER_START_TIMEOUT
from tests.support.processes import Server, isolated_env, manage, python

pytestmark = [pytest.mark.browser, pytest.mark.process]

LAPTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
SETUP = """
import json
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
project = create_project(directory="/srv/console/chartr", kind="git", display_name="Console project")
workspace = create_workspace(project=project, directory="/srv/console/chartr/feature", kind="worktree")
agents = []
for n in range(12):
    agents.append(create_agent(
        workspace=workspace, provider="claude", agent_id=f"3f2b9c1e-7a4d-4e8b-9c0f-5d6e7f8a9b{n:02d}",
        title=f"Agent {n}: refactor the timeline store so that long titles never push the columns off the screen",
        lifecycle="running" if n % 2 else "idle",
        requires_attention=n < 4, attention_reason="permission" if n < 4 else None,
    ).agent_id)
print("SETUP " + json.dumps({"agents": agents}))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    """A migrated chartr with a superuser, a project, a workspace and 12 agents, served by the entrypoint."""
    database = scratch_db(migrated=True, purpose="console")
    env = isolated_env(
        tmp_path, CHARTR_DEBUG="0", CHARTR_WORKERS="1", DJANGO_SUPERUSER_PASSWORD=PASSWORD, **database.env()
    )
    manage("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com", env=env, check=True)
    result = python(SETUP, env=env)
    setup = next((line for line in result.stdout.splitlines() if line.startswith("SETUP ")), None)
    assert setup, result.stderr
    with Server(env, tmp_path / "server.log", start_timeout=SERVER_START_TIMEOUT) as running:
        yield running.base_url, json.loads(setup.split(" ", 1)[1])


@pytest.fixture
def browser():
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class Console:
    """A logged-in page at one viewport, collecting every console error and uncaught exception."""

    def __init__(self, browser, base: str, viewport: dict[str, int]) -> None:
        self.context = browser.new_context(viewport=viewport, timezone_id="Europe/Paris")
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.base = base
        self.errors: list[str] = []
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on(
            "response",
            lambda response: response.status >= 400 and self.errors.append(f"{response.status} {response.url}"),
        )

    def log_in(self) -> Console:
        self.page.goto(f"{self.base}/admin/login/")
        self.page.fill("#id_username", "admin")
        self.page.fill("#id_password", PASSWORD)
        self.page.click("input[type=submit]")
        self.page.wait_for_selector("#chartr-dashboard")
        return self

    def goto(self, path: str) -> None:
        self.page.goto(self.base + path)

    def shot(self, name: str, *, full_page: bool = True) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=full_page)
        assert path.stat().st_size > 5_000


def fits_the_width(page) -> None:
    width = page.viewport_size["width"]
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, f"{page.url} scrolls sideways: {scroll_width} px wide at {width} px"


def test_operator_restores_a_data_snapshot_and_stays_logged_in(browser, server):
    from playwright.sync_api import expect

    base, _setup = server
    laptop = Console(browser, base, LAPTOP).log_in()
    page = laptop.page

    # the dashboard's link says what the page does, and the page takes a snapshot
    expect(page.locator("#dash-data-snapshots")).to_contain_text("List, take or restore data snapshots")
    laptop.goto("/admin/data-snapshots/")
    page.click("#take-data-snapshot")
    expect(page.locator(".messagelist .success")).to_contain_text("taken")
    snapshot = page.locator("#data-snapshots tbody tr code").first.inner_text()

    # then a second project appears: the preview counts it, in the admin's words
    page.goto(f"{base}/admin/registry/project/add/")
    page.fill("#id_directory", "/srv/console/later")
    page.select_option("#id_kind", "git")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    laptop.goto("/admin/data-snapshots/")
    page.locator("#data-snapshots tbody tr", has_text=snapshot).locator(".restore-link").click()
    expect(page.locator("#restore-counts")).to_contain_text("Projects: 1 in the snapshot, 2 now")
    expect(page.locator("#restore-counts")).to_contain_text("Agents: 12 in the snapshot, 12 now")
    expect(page.locator("#restore-counts")).not_to_contain_text("registry_project")
    expect(page.locator("#restore-undo")).to_contain_text("pre-restore")
    fits_the_width(page)
    laptop.shot("restore-preview.png")

    # at phone width the preview is readable too
    phone = Console(browser, base, PHONE).log_in()
    phone.goto(page.url.removeprefix(base))
    expect(phone.page.locator("#restore-counts")).to_contain_text("Projects: 1 in the snapshot, 2 now")
    fits_the_width(phone.page)
    phone.shot("restore-preview-phone.png")

    # confirm: restored through the service, the undo snapshot named, still logged in as admin
    page.click("#confirm-button")
    success = page.locator(".messagelist .success")
    expect(success).to_contain_text(f"Restored data snapshot {snapshot}")
    expect(success).to_contain_text("You are still logged in as admin")
    undo = success.inner_text().split("The state before is data snapshot ")[1].split(":")[0]
    assert page.url.endswith("/admin/data-snapshots/")
    expect(page.locator("#data-snapshots")).to_contain_text(undo)
    laptop.goto("/admin/registry/project/")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    # the other browser's session was not in the snapshot: it logs in again
    phone.goto("/admin/")
    expect(phone.page.locator("#id_username")).to_be_visible()

    # undo it from the admin too
    laptop.goto(f"/admin/data-snapshots/{undo}/restore/")
    expect(page.locator("#restore-counts")).to_contain_text("Projects: 2 in the snapshot, 1 now")
    page.click("#confirm-button")
    expect(page.locator(".messagelist .success")).to_contain_text(f"Restored data snapshot {undo}")
    laptop.goto("/admin/registry/project/")
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    assert laptop.errors == [] and phone.errors == []
