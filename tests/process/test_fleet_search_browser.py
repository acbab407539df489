"""The fleet search in a real browser against a real server (gunicorn + uvicorn, as deployed), at 1440x900.

Debian's chromium driven by Playwright: from the dashboard open the fleet
search, search a word across three agents in two projects, see them grouped
with their match counts (newest match first), narrow to one project and one
item type, and follow a result to its row on the agent's timeline. The page
fits the screen, the browser logs no error, and the results are saved to
``test-artifacts/fleet-search.png``.
"""

from __future__ import annotations

import pytest

from tests.process.test_timeline_browser import browser_page  # noqa: F401 - a fixture
from tests.support.browser import ARTIFACTS, CHROMIUM, PASSWORD, admin_server

pytestmark = [pytest.mark.browser, pytest.mark.process]

SETUP = """
import json
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
from timeline.services import NewTimelineItem, append_timeline_items
agents = {}
for name, texts in (
    ("alpha", ["deploy the zebra service", "llama", "zebra logs look fine", "zebra done"]),
    ("beta", ["nothing here", "a zebra crossing"]),
    ("gamma", ["zebra in a tool call"]),
):
    project = create_project(directory=f"/srv/fleet/{name}", kind="git")
    workspace = create_workspace(project=project, directory=f"/srv/fleet/{name}/w", kind="checkout")
    agent = create_agent(workspace=workspace, provider="claude", agent_id=f"fleet-{name}", title=f"Agent {name}")
    kind = "tool_call" if name == "gamma" else "user_message"
    items = [
        {"type": "tool_call", "callId": "c1", "name": "bash", "status": "completed", "input": {"cmd": text}}
        if kind == "tool_call" else {"type": kind, "text": text}
        for text in texts
    ]
    append_timeline_items(agent_id=agent.agent_id, items=[NewTimelineItem(item=item) for item in items])
    agents[name] = project.pk
print("SETUP " + json.dumps(agents))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    with admin_server(tmp_path, scratch_db(migrated=True, purpose="fleetsearch"), setup=SETUP) as (base_url, setup):
        yield base_url, setup


def test_operator_searches_every_timeline_and_lands_on_a_row(browser_page, server):  # noqa: F811
    from playwright.sync_api import expect

    assert CHROMIUM.exists()
    base, projects = server
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def on_console(message) -> None:
        if message.type == "error":
            errors.append(f"{message.text} {message.location}")

    page.on("console", on_console)
    missing: list[str] = []
    page.on("response", lambda response: missing.append(response.url) if response.status >= 400 else None)

    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    page.click("#dash-fleet-search")
    expect(page.locator("#fs-zone")).to_have_text("Europe/Paris")
    page.fill("#fs-q", "zebra")
    page.click("#fs-go")
    results = page.locator("#fs-results .fs-result")
    expect(results).to_have_count(3)
    # Newest match first: gamma's agent was written last.
    assert results.evaluate_all("rows => rows.map(r => r.dataset.agentId)") == [
        "fleet-gamma",
        "fleet-beta",
        "fleet-alpha",
    ]
    counts = page.locator("#fs-results td.fs-count").all_inner_texts()
    assert counts == ["1", "1", "3"]
    fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, "the page is wider than the screen"
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "fleet-search.png"
    page.screenshot(path=str(screenshot), full_page=False)
    assert screenshot.stat().st_size > 10_000

    # Narrow to one project, then to tool calls only (no user message of that project matches).
    page.select_option("#fs-project", str(projects["alpha"]))
    page.click("#fs-go")
    expect(results).to_have_count(1)
    page.check("#fs-form input[value=tool_call]")
    page.click("#fs-go")
    expect(page.locator("#fs-none")).to_contain_text("with these filters")
    page.uncheck("#fs-form input[value=tool_call]")
    page.click("#fs-go")
    expect(results).to_have_count(1)

    # The result opens the agent's timeline on its newest match.
    page.click("#fs-results .fs-link")
    page.wait_for_url("**/fleet-alpha/timeline/**#seq-4")
    expect(page.locator(".tl-hit")).to_have_attribute("data-seq", "4")
    expect(page.locator(".tl-hit")).to_be_in_viewport()
    expect(page.locator(".tl-prev-match")).to_be_visible()

    # At phone width the same search answers in a page no wider than the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base}/admin/search/?q=zebra")
    expect(results).to_have_count(3)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "wider than a phone"
    link = page.locator("#fs-results .fs-link").first
    box = link.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    phone = ARTIFACTS / "fleet-search-phone.png"
    page.screenshot(path=str(phone), full_page=False)
    assert phone.stat().st_size > 10_000

    assert not errors, (errors, missing)
