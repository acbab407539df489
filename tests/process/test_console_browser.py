"""The operator's console in a real browser against a real server (the entrypoint: gunicorn + uvicorn, DEBUG off).

Debian's chromium driven by Playwright (never ``playwright install``), at a
laptop's 1440 x 900 and a phone's 390 x 844, with no console error on any
page: restore a data snapshot from the admin (the preview, the confirmation,
still logged in after it). Screenshots go to ``test-artifacts/`` (listed in
docs/operations.md, "Screenshots").
"""

from __future__ import annotations

import pytest

from tests.support.browser import (
    ARTIFACTS,
    PASSWORD,
    admin_server,
    chromium,
)

pytestmark = [pytest.mark.browser, pytest.mark.process]

LAPTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
SETUP = """
import json
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
from timeline.services import NewTimelineItem, append_timeline_items
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
    append_timeline_items(agent_id=agents[-1], items=[NewTimelineItem(item={"type": "user_message", "text": "go"})])
print("SETUP " + json.dumps({"agents": agents}))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    """A migrated chartr with a superuser, a project, a workspace and 12 agents, served by the entrypoint."""
    with admin_server(tmp_path, scratch_db(migrated=True, purpose="console"), setup=SETUP) as (base_url, setup):
        yield base_url, setup


@pytest.fixture
def browser():
    with chromium() as browser:
        yield browser


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
        # the login page set the browser's zone in its cookie, so the dashboard came in it: no reload follows
        self.page.wait_for_selector("#chartr-zone[data-zone='Europe/Paris']")
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


#: Every word of these elements' text laid out on one line: a header broken inside a word is not.
BROKEN_WORDS = """(selector) => {
  const broken = [];
  for (const element of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""
#: Pairs of the elements matching ``selector`` whose boxes overlap (by more than a pixel).
OVERLAPS = """([selector, other]) => {
  const boxes = (s) => [...document.querySelectorAll(s)].map((el) => [el.id || el.className, el.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && r.height > 0);
  const mine = boxes(selector), theirs = other ? boxes(other) : mine;
  const hits = [];
  for (const [a, r] of mine) for (const [b, q] of theirs) {
    if (a === b && r === q) continue;
    const x = Math.min(r.right, q.right) - Math.max(r.left, q.left), y = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
    if (x > 1 && y > 1 && (other || a < b)) hits.push(`${a} overlaps ${b}`);
  }
  return hits;
}"""


def the_zone_is_named(page) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#chartr-zone")).to_contain_text("Times in Europe/Paris (CET, +0100)")


def check_the_dashboard(console: Console, name: str) -> None:
    page = console.page
    console.goto("/admin/")
    the_zone_is_named(page)
    cards = page.locator("#chartr-dashboard .dash-card")
    assert cards.count() == 5
    for index in range(cards.count()):
        card = cards.nth(index)
        assert card.evaluate("el => el.tagName") == "A" and card.get_attribute("href"), "every card is a link"
    assert page.evaluate(BROKEN_WORDS, "#chartr-dashboard h2, #chartr-dashboard h3, #chartr-dashboard th") == []
    assert page.evaluate(OVERLAPS, ["#chartr-dashboard .module, #chartr-dashboard .dash-counts", None]) == []
    assert page.evaluate(OVERLAPS, ["#chartr-dashboard .module", "#content-related"]) == []
    fits_the_width(page)
    console.shot(name)
    page.click("#dash-agents")
    page.wait_for_url("**/admin/snapshots/agentsnapshot/")


def check_the_agent_list(console: Console, agents: list[str], name: str) -> None:
    page = console.page
    console.goto("/admin/snapshots/agentsnapshot/")
    console.shot(name)
    the_zone_is_named(page)
    fits_the_width(page)
    width = page.viewport_size["width"]
    title = page.locator("#result_list .field-agent .agent-title").first
    full = title.get_attribute("title") or ""
    assert full.startswith("Agent ") and "off the screen" in full, "a cut-short title shows its whole text on hover"
    assert title.evaluate("el => el.scrollWidth > el.clientWidth"), "the title is cut short"
    assert page.evaluate(BROKEN_WORDS, "#result_list thead th") == []
    if width >= 1440:
        # the menu stays open, and every column is on the screen
        assert page.locator("#nav-sidebar").is_visible()
        columns = page.evaluate(
            "[...document.querySelectorAll('#result_list thead th')].map(th => [th.className, th.offsetWidth])"
        )
        assert page.evaluate("document.querySelector('#changelist .results').scrollWidth") <= page.evaluate(
            "document.querySelector('#changelist .results').clientWidth"
        ), columns
        right_edges = page.evaluate(
            "[...document.querySelectorAll('#result_list thead th')].map(th => th.getBoundingClientRect().right)"
        )
        assert right_edges and max(right_edges) <= width
        assert page.evaluate(OVERLAPS, ["#changelist-filter", "#changelist .results"]) == []
    else:
        # the id and the title are on the screen, one line each, wide enough to read
        # (the short id is 8 characters; a title is cut short no narrower than 80 px)
        for cell, least in ((page.locator("#result_list .field-agent .agent-short-id").first, 40), (title, 80)):
            box = cell.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width and box["width"] >= least, box
            assert cell.evaluate("el => el.getClientRects().length") == 1


def test_pages_fit_a_laptop_and_a_phone_in_the_operators_zone(browser, server):
    from playwright.sync_api import expect

    base, setup = server
    for viewport, suffix in ((LAPTOP, ""), (PHONE, "-phone")):
        console = Console(browser, base, viewport).log_in()
        check_the_dashboard(console, f"dashboard{suffix}.png")
        check_the_agent_list(console, setup["agents"], f"agent-list{suffix}.png")
        # an agent's page and the data snapshots page name the zone and show their times in it
        console.goto(f"/admin/snapshots/agentsnapshot/{setup['agents'][0]}/change/")
        the_zone_is_named(console.page)
        expect(console.page.locator(".field-created_at .readonly")).to_contain_text(" CET")
        fits_the_width(console.page)
        # the favicon is served
        icon = console.page.locator("link[rel=icon]").get_attribute("href")
        response = console.page.request.get(base + icon)
        assert response.ok and response.headers["content-type"].startswith("image/svg+xml")
        assert console.errors == []
