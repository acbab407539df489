"""End to end in a real browser against a real server process.

Debian's chromium driven by Playwright (never ``playwright install``): log in,
create a project and a workspace, archive the project through the
confirmation page, check the workspace shows as archived, and save a
screenshot of the dashboard to ``test-artifacts/dashboard-archived.png``; then create
an API token and open the Swagger UI. Every page is served under chartr's
Content-Security-Policy, and the browser reports no violation of it on any
of them.

The server runs with DEBUG off and the static files collected, as deployed,
so the screenshot also shows that the admin is styled.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support.browser import (
    ARTIFACTS,
    PASSWORD,
    admin_server,
    chromium,
)

pytestmark = [pytest.mark.browser, pytest.mark.process]


@pytest.fixture
def server(tmp_path, scratch_db):
    """A migrated chartr with a superuser, served by the entrypoint (static files collected, DEBUG off)."""
    with admin_server(tmp_path, scratch_db(migrated=True, purpose="browser")) as (base_url, _):
        yield base_url


@pytest.fixture
def browser_page():
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(20_000)
        yield page


@pytest.fixture
def csp_violations(browser_page) -> list[str]:
    """What the browser reports as Content-Security-Policy violations, and every HTML page served without a strict policy."""
    violations: list[str] = []

    def on_console(message) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    def on_response(response) -> None:
        if response.headers.get("content-type", "").startswith("text/html"):
            policy = response.headers.get("content-security-policy", "")
            if "default-src 'self'" not in policy or "'unsafe-inline'" in policy:
                violations.append(f"{response.url} served with the policy {policy!r}")

    page = browser_page
    page.on("console", on_console)
    page.on("response", on_response)
    page.expose_function("chartrCspViolation", lambda report: violations.append(report))
    page.add_init_script(
        """document.addEventListener("securitypolicyviolation", (event) => window.chartrCspViolation(
            `${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${event.sourceFile}:${event.lineNumber}`
        ));"""
    )
    return violations


def test_operator_archives_a_project_in_a_real_browser(browser_page, csp_violations, server):
    from playwright.sync_api import expect

    page = browser_page

    # the API docs without a session: a program gets the JSON 401, the browser the login, then the docs
    answer = httpx.get(f"{server}/api/v1/docs", headers={"Accept": "*/*"})
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "not_authenticated"
    page.goto(f"{server}/api/v1/docs")
    expect(page).to_have_url(f"{server}/admin/login/?next=/api/v1/docs")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page).to_have_url(f"{server}/api/v1/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    page.goto(f"{server}/admin/")
    expect(page.locator("#chartr-dashboard")).to_be_visible()
    # the admin is styled with DEBUG off: its stylesheet was served
    css = page.request.get(server + page.locator("link[rel=stylesheet]").first.get_attribute("href"))
    assert css.ok and "text/css" in css.headers["content-type"], "the admin's CSS is served"
    header_colour = page.evaluate("getComputedStyle(document.querySelector('#header')).backgroundColor")
    assert header_colour not in ("", "rgba(0, 0, 0, 0)", "transparent")
    # and so is the dashboard, from chartr's own stylesheet (no inline styles under the policy)
    assert page.evaluate("getComputedStyle(document.querySelector('#chartr-dashboard .dash-counts')).display") == "flex"

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
    expect(page.locator(".confirmation-summary")).to_have_text(
        [
            "Archiving project “Browser project (/srv/browser/chartr)” also archives its 1 workspace and 1 agent.",
            "It closes 1 running agent; unarchiving reopens each as it was.",
        ]
    )
    expect(page.locator(".messagelist .warning")).to_contain_text("1 agent is running; archiving closes it.")
    page.click("#confirm-button")
    expect(page.locator(".messagelist .success")).to_contain_text(
        "Archived 1 project; also archived its 1 workspace and 1 agent; closed 1 running."
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
    screenshot = ARTIFACTS / "dashboard-archived.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 10_000

    # on a 1,280 x 800 screen: no horizontal scroll, and no column header broken inside a word
    page.set_viewport_size({"width": 1280, "height": 800})
    for path in ("/admin/", *(f"/admin/{model}/?archived=all" for model in LIST_MODELS)):
        assert_fits_a_laptop_screen(page, server + path)

    create_an_api_token(page, server)
    open_the_api_docs(page, server)
    assert csp_violations == []


LIST_MODELS = ("registry/project", "registry/workspace", "snapshots/agentsnapshot")


def assert_fits_a_laptop_screen(page, url: str) -> None:
    page.goto(url)
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= 1280, f"{url} scrolls sideways: {scroll_width} px wide"
    # An inline element laid out on two lines has two client rects.
    broken = page.evaluate(
        """[...document.querySelectorAll('#result_list thead th .text > *')]
             .filter(el => el.getClientRects().length > 1).map(el => el.textContent.trim())"""
    )
    assert broken == [], f"{url}: headers wrap: {broken}"


def create_an_api_token(page, server: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{server}/admin/tokens/apitoken/add/")
    page.fill("#id_name", "browser-token")
    page.click("input[name=_save]")
    raw_token = page.locator("#raw-token")
    expect(raw_token).to_have_value(re.compile(r"^chartr_"))
    # One click selects the whole token (a script file: no inline handler under the policy).
    raw_token.click()
    selected = raw_token.evaluate("input => input.value.substring(input.selectionStart, input.selectionEnd)")
    assert selected == raw_token.input_value()


def open_the_api_docs(page, server: str) -> None:
    """Swagger UI, on the admin's staff session: its start-up script runs and it lists the operations."""
    from playwright.sync_api import expect

    page.goto(f"{server}/api/v1/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/projects").first).to_be_visible()
    page.locator(".opblock-summary", has_text="/api/v1/projects").first.click()
    expect(page.locator(".opblock-body").first).to_be_visible()
