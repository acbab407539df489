"""The agent's timeline page in a real browser against a real server (gunicorn + uvicorn, as deployed).

Debian's chromium driven by Playwright (never ``playwright install``), in the
Europe/Paris zone: open an agent's timeline from its change page, see rows
appended through the API appear without a reload (a provisional item first,
replaced by its committed row), filter to tool_call, search a word and land
on its row, jump to a seq, and move with j. Screenshots of each state go to
``test-artifacts/timeline-*.png``. Every request the pages make goes to
chartr itself.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import skip_or_fail
from tests.process.test_admin_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, PASSWORD, SERVER_START_TIMEOUT
from tests.support.processes import Server, isolated_env, manage, python

pytestmark = [pytest.mark.browser, pytest.mark.process]

AGENT = "timeline-browser-agent"
SETUP = """
import json, sys
from tokens.services import create_api_token
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
from timeline.services import NewTimelineItem, append_timeline_items
token = create_api_token(name="browser")[1]
project = create_project(directory="/srv/browser/timeline", kind="git")
workspace = create_workspace(project=project, directory="/srv/browser/timeline/w", kind="checkout")
agent = create_agent(workspace=workspace, provider="claude", agent_id=sys.argv[-1])
items = []
for n in range(1, 61):
    if n % 4 == 0:
        items.append({"type": "tool_call", "callId": f"c{n}", "name": "bash", "status": "completed",
                      "input": {"cmd": f"make step{n}"}})
    else:
        word = "zebra" if n == 13 else "llama"
        items.append({"type": "user_message" if n % 2 else "assistant_message", "text": f"row {n} about {word}"})
append_timeline_items(agent_id=agent.agent_id, items=[NewTimelineItem(item=item) for item in items])
print("SETUP " + json.dumps({"token": token}))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    """A migrated chartr with a superuser, an API token and an agent with 60 rows, served by the entrypoint."""
    database = scratch_db(migrated=True, purpose="tlbrowser")
    env = isolated_env(
        tmp_path,
        CHARTR_DEBUG="0",
        CHARTR_WORKERS="1",
        CHARTR_SSE_KEEPALIVE_SECONDS="1",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        **database.env(),
    )
    manage("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com", env=env, check=True)
    result = python(SETUP, AGENT, env=env)
    setup = next((line for line in result.stdout.splitlines() if line.startswith("SETUP ")), None)
    assert setup, result.stderr
    with Server(env, tmp_path / "server.log", start_timeout=SERVER_START_TIMEOUT) as running:
        yield running.base_url, json.loads(setup.split(" ", 1)[1])["token"]


@pytest.fixture
def browser_page():
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="Europe/Paris")
            page = context.new_page()
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"timeline-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 5_000


def test_operator_follows_searches_and_jumps_in_an_agents_timeline(browser_page, server):
    from playwright.sync_api import expect

    base, token = server
    page = browser_page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10)

    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    # open the timeline from the top of the agent's page; the times follow the browser's zone
    page.goto(f"{base}/admin/snapshots/agentsnapshot/{AGENT}/change/")
    page.click("#agent-page-timeline")
    expect(page.locator("#tl-zone")).to_have_text("Europe/Paris")
    expect(page.locator("#timeline .tl-row")).to_have_count(50)
    expect(page.locator("#timeline .tl-row").last).to_have_attribute("data-seq", "60")
    expect(page.locator("#seq-60 time")).to_contain_text(" CET")
    expect(page.locator("#tl-live-status")).to_have_text("live")
    shot(page, "open")

    # a provisional item shows until its committed row replaces it; rows appear without a reload
    page.evaluate("window.__same_page = true")
    provisional = {"item": {"type": "assistant_message", "text": "typing an answer"}, "item_id": "answer-61"}
    assert api.post(f"/api/v1/agents/{AGENT}/timeline/provisional", json=provisional).status_code == 202
    expect(page.locator("#tl-provisional .tl-provisional")).to_contain_text("typing an answer")
    page.locator("#tl-provisional .tl-provisional").scroll_into_view_if_needed()
    shot(page, "provisional")
    appended = api.post(
        f"/api/v1/agents/{AGENT}/timeline",
        json={
            "items": [
                {"item": {"type": "assistant_message", "text": "the committed answer"}, "item_id": "answer-61"},
                {"item": {"type": "tool_call", "callId": "c62", "name": "pytest", "status": "failed"}},
            ]
        },
    )
    assert appended.status_code in (200, 201), appended.text
    expect(page.locator("#seq-61")).to_contain_text("the committed answer")
    expect(page.locator("#seq-62")).to_contain_text("pytest")
    expect(page.locator("#tl-provisional .tl-row")).to_have_count(0)
    assert page.evaluate("window.__same_page") is True, "no reload"
    page.locator("#seq-62").scroll_into_view_if_needed()
    shot(page, "live")

    # filter to tool calls with a chip
    page.check("#tl-filter-form input[value=tool_call]")
    page.wait_for_url("**type=tool_call**")
    rows = page.locator("#timeline .tl-row")
    expect(rows.last).to_have_attribute("data-seq", "62")
    assert set(rows.evaluate_all("rows => rows.map(r => r.dataset.itemType)")) == {"tool_call"}
    page.locator("#seq-62 summary").click()
    shot(page, "filter")

    # search a word ("/" focuses the box) and land on its row
    with page.expect_navigation():
        page.click(".tl-clear")
    page.wait_for_load_state("load")
    page.keyboard.press("/")
    expect(page.locator("#tl-search")).to_be_focused()
    page.keyboard.type("zebra")
    page.keyboard.press("Enter")
    page.wait_for_url("**#seq-13")
    expect(page.locator(".tl-hit")).to_have_attribute("data-seq", "13")
    expect(page.locator(".tl-hit")).to_be_in_viewport()
    shot(page, "search")

    # jump to a seq, then j moves to the next row
    page.fill("#tl-seq", "30")
    page.click("#tl-seq-go")
    page.wait_for_url("**#seq-30")
    expect(page.locator(".tl-hit")).to_have_attribute("data-seq", "30")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("j")
    expect(page.locator(".tl-current")).to_have_attribute("data-seq", "31")
    shot(page, "jump")

    assert not errors, errors
    foreign = [url for url in requested if not url.startswith(base) and not url.startswith("data:")]
    assert not foreign, f"assets from outside chartr: {foreign}"
