"""Agents needing attention, in a real browser against a real server (as deployed, DEBUG off).

Debian's chromium driven by Playwright (never ``playwright install``), at
1440 x 900 and at 390 px wide: the dashboard counts the agents waiting per
reason and lists the longest waiting first, its "see all" opens the filtered
agent list in that order, the longest waiting agent's page shows the
permission it waits on as text, and its Clear attention button goes through
the confirmation page to the service, whose ``agent`` event reaches a client
following the agent's stream. No page logs a console error. Screenshots go to
``test-artifacts/`` (listed in docs/operations.md).
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from tests.support.browser import (
    ARTIFACTS,
    PASSWORD,
    admin_server,
    chromium,
)

pytestmark = [pytest.mark.browser, pytest.mark.process]

LONGEST = "perm-longest-0000-4000-8000-000000000001"
SETUP = """
import datetime as dt, json, sys
from django.utils import timezone
from tokens.services import create_api_token
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
from timeline.services import NewTimelineItem, append_timeline_items
token = create_api_token(name="browser")[1]
project = create_project(directory="/srv/browser/fleet", kind="git", display_name="Fleet")
workspace = create_workspace(project=project, directory="/srv/browser/fleet/main", kind="checkout")
now = timezone.now()
def waiting(agent_id, reason, hours, title):
    return create_agent(workspace=workspace, provider="claude", agent_id=agent_id, title=title, lifecycle="running",
                        requires_attention=True, attention_reason=reason, attention_at=now - dt.timedelta(hours=hours))
longest = sys.argv[-1]
waiting(longest, "permission", 50, "Migrate the billing tables to the new ledger schema")
waiting("perm-2", "permission", 40, "Upgrade the CI runners")
waiting("perm-3", "permission", 30, "Rotate the staging keys")
for n in range(22):
    waiting(f"done-{n}", "finished", 1 + n / 100, f"Finished task {n}")
waiting("broke-1", "error", 5, "Nightly export")
create_agent(workspace=workspace, provider="claude", agent_id="calm", title="Quiet agent")
request = {"id": "perm-7", "provider": "claude", "name": "Bash", "kind": "tool", "title": "Run a shell command",
           "description": "Claude wants to run the migration:\\nmake migrate", "input": {"command": "make migrate"},
           "actions": [{"id": "allow", "label": "Allow", "behavior": "allow"},
                       {"id": "deny", "label": "Deny", "behavior": "deny"}]}
append_timeline_items(agent_id=longest, items=[
    NewTimelineItem(item={"type": "user_message", "text": "migrate the billing tables"}),
    NewTimelineItem(item={"type": "interaction", "request": request}),
])
print("SETUP " + json.dumps({"token": token}))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    """A migrated chartr with a superuser, an API token and 28 agents, 27 of them waiting; served by the entrypoint."""
    with admin_server(
        tmp_path,
        scratch_db(migrated=True, purpose="attnbrowser"),
        setup=SETUP,
        args=(LONGEST,),
        CHARTR_SSE_KEEPALIVE_SECONDS="1",
    ) as (base_url, setup):
        yield base_url, setup["token"]


@pytest.fixture
def browser():
    with chromium() as browser:
        yield browser


def open_page(browser, base: str, width: int, height: int, errors: list[str]):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("console", lambda message: console_error(message, width, errors))
    page.on("pageerror", lambda error: errors.append(f"{width}px: {error}"))
    page.on("response", lambda response: response.status >= 400 and errors.append(f"{response.status} {response.url}"))
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    return page


def console_error(message, width: int, errors: list[str]) -> None:
    """Every console error but the browser's own request for /favicon.ico (the admin names no icon yet)."""
    if message.type != "error":
        return
    where = message.location.get("url", "")
    if where.endswith("/favicon.ico"):
        return
    errors.append(f"{width}px: {message.text} at {where}")


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000


class AgentEvents:
    """The ``agent`` events of one agent's stream, read in a thread."""

    def __init__(self, base: str, token: str, agent_id: str) -> None:
        self.events: list[dict] = []
        self.opened = threading.Event()
        self.changed = threading.Event()
        self._stop = threading.Event()
        url = f"{base}/api/v1/agents/{agent_id}/timeline/stream"
        self._thread = threading.Thread(target=self._read, args=(url, token), daemon=True)
        self._thread.start()

    def _read(self, url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(30, read=60)) as response:
            event = ""
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "agent":
                    data = json.loads(line.split(":", 1)[1])
                    self.events.append(data)
                    (self.opened if data["reason"] == "snapshot" else self.changed).set()

    def stop(self) -> None:
        self._stop.set()


def check_the_dashboard(page, base: str, *, waiting_on_permission: list[str]) -> None:
    """The counts per reason, and the longest waiting first: the permissions (30 h and more), then the error (5 h)."""
    from playwright.sync_api import expect

    page.goto(f"{base}/admin/")
    attention = page.locator("#dash-attention")
    total = 23 + len(waiting_on_permission)
    expect(attention.locator("h2")).to_have_text(f"Agents needing attention ({total}), the longest waiting first")
    expect(attention.locator(".dash-reason")).to_have_text(
        ["22 finished", "1 error", f"{len(waiting_on_permission)} permission"]
    )
    rows = attention.locator("tbody tr")
    expect(rows).to_have_count(20)
    for n, agent_id in enumerate([*waiting_on_permission, "broke-1", "done-21"]):
        expect(rows.nth(n)).to_have_attribute("data-agent", agent_id)
    expect(attention.locator(".dash-more")).to_have_text(f"{total - 20} more waiting: see all {total}")


def test_an_operator_finds_and_clears_the_longest_wait(browser, server):
    from playwright.sync_api import expect

    base, token = server
    errors: list[str] = []
    page = open_page(browser, base, 1440, 900, errors)

    check_the_dashboard(page, base, waiting_on_permission=[LONGEST, "perm-2", "perm-3"])
    shot(page, "dashboard-attention")

    # "3 permission" opens the agent list filtered to them, the longest waiting first
    page.click("#dash-attention .dash-reason[data-reason=permission] a")
    expect(page).to_have_url(f"{base}/admin/snapshots/agentsnapshot/?attention=permission")
    expect(page.locator("#result_list tbody .agent-short-id")).to_have_text(["perm-lon", "perm-2", "perm-3"])
    first_title = page.locator("#result_list tbody .agent-title").first
    expect(first_title).to_have_attribute("title", "Migrate the billing tables to the new ledger schema")
    assert first_title.evaluate("el => el.scrollWidth > el.clientWidth"), "a long title is cut short"
    page.locator("#result_list tbody .copy-button").first.click()
    expect(page.locator("#result_list tbody .copy-button").first).to_have_text("copied")
    assert page.evaluate("navigator.clipboard.readText()") == LONGEST
    shot(page, "agent-list-attention")

    # the agent's page: what it waits on, as text, above the form; daemon-owned fields read-only
    page.locator("#result_list tbody .agent-link").first.click()
    expect(page.locator("#agent-crumb .agent-short-id")).to_have_text("perm-lon")
    expect(page.locator("#agent-attention")).to_contain_text("Needs attention: permission")
    request = page.locator("#agent-request")
    expect(request.locator("h2")).to_have_text("Waiting on this request")
    expect(request).to_contain_text("Run a shell command · Bash · asks for permission to use a tool")
    expect(request.locator(".agent-request-text").first).to_have_text(
        "Claude wants to run the migration:\nmake migrate"
    )
    expect(request.locator(".agent-request-text").nth(2)).to_have_text("- Allow (allow)\n- Deny (deny)")
    expect(page.locator("input[name=title], select[name=lifecycle], input[name=provider]")).to_have_count(0)
    shot(page, "agent-request")

    # clear it: the confirmation states the change, the service sends the agent event
    stream = AgentEvents(base, token, LONGEST)
    try:
        assert stream.opened.wait(20), "the stream opened"
        page.click("#clear-attention-button")
        expect(page.locator(".confirmation-summary").first).to_contain_text(
            "it now needs attention for permission since "
        )
        shot(page, "clear-attention-confirm")
        page.click("#confirm-button")
        expect(page.locator(".messagelist .success")).to_have_text("Cleared attention on 1 agent.")
        expect(page.locator("#agent-attention")).to_have_count(0)
        expect(page.locator("#agent-request h2")).to_have_text("Latest interaction request")
        assert stream.changed.wait(20), "the agent event reached the stream"
    finally:
        stream.stop()
    update = next(event for event in stream.events if event["reason"] == "updated")
    assert (update["requires_attention"], update["attention_reason"], update["attention_at"]) == (False, None, None)

    # the admin history has the change (and the dashboard at 390 px counts one fewer permission)
    page.goto(f"{base}/admin/snapshots/agentsnapshot/{LONGEST}/history/")
    expect(page.locator("#change-history")).to_contain_text("Cleared attention (it needed attention for permission")

    narrow = open_page(browser, base, 390, 844, errors)
    check_the_dashboard(narrow, base, waiting_on_permission=["perm-2", "perm-3"])
    reasons = narrow.locator("#dash-attention .dash-attention-reasons")
    assert reasons.evaluate("el => el.scrollWidth <= el.clientWidth"), "the reason links wrap at 390 px"
    shot(narrow, "dashboard-attention-390")
    narrow.goto(f"{base}/admin/snapshots/agentsnapshot/perm-2/change/")
    expect(narrow.locator("#clear-attention-button")).to_be_visible()
    box = narrow.locator("#agent-attention").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    shot(narrow, "agent-attention-390")
    narrow.click("#clear-attention-button")
    narrow.click("#confirm-button")
    expect(narrow.locator(".messagelist .success")).to_have_text("Cleared attention on 1 agent.")

    assert errors == []
