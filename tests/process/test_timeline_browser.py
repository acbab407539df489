"""The agent's timeline page in a real browser against a real server (gunicorn + uvicorn, as deployed).

Debian's chromium driven by Playwright (never ``playwright install``), in the
Europe/Paris zone: open an agent's timeline from its change page, see rows
appended through the API appear without a reload (a provisional item first,
replaced by its committed row), filter to tool_call, search a word and land
on its row, jump to a seq, and move with j. At 1440x900 and at 390 px: the
newest page opens at its newest row and, in 8 checks of rows committed while
it loads or while it is open, never loses one; a tool call's later state
replaces its entry live; the agent's lifecycle and attention change live; a
tool call and its later state read as one entry, its output as text folded
after a few lines (a ``<script>`` in it shown, never run), its JSON coloured,
and a search for a word of its folded output opens it with the word marked.
Screenshots of each state go to ``test-artifacts/timeline-*.png`` (their list
is in docs/operations.md). Every request the pages make goes to chartr
itself, and no page logs an error.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.support.browser import (
    ARTIFACTS,
    PASSWORD,
    admin_server,
    chromium,
)

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
tools = create_agent(workspace=workspace, provider="claude", agent_id=sys.argv[-1] + "-tools")
shell = {"type": "shell", "command": "pytest -q tests/", "cwd": "/srv/browser/timeline/w"}
output = "\\n".join([f"tests/test_{n}.py ....  [{n * 4}%]" for n in range(1, 11)]
                   + ["<script>window.__owned = true</script>", "the okapi report: 15 passed"]
                   + [f"tests/test_{n}.py ....  [{n * 4}%]" for n in range(11, 26)])
calls = [
    {"type": "user_message", "text": "run the tests"},
    {"type": "tool_call", "callId": "t1", "name": "Bash", "status": "running", "detail": shell},
    {"type": "assistant_message", "text": "running them now"},
    {"type": "tool_call", "callId": "t1", "name": "Bash", "status": "completed",
     "detail": {**shell, "output": output, "exitCode": 0}},
    {"type": "tool_call", "callId": "t2", "name": "Edit", "status": "completed",
     "detail": {"type": "unknown", "input": {"file": "a.py", "lines": [1, 2], "dry": False}, "output": None}},
]
append_timeline_items(agent_id=tools.agent_id, items=[NewTimelineItem(item=item) for item in calls])
tail = create_agent(workspace=workspace, provider="claude", agent_id=sys.argv[-1] + "-tail")
append_timeline_items(
    agent_id=tail.agent_id,
    items=[NewTimelineItem(item={"type": "user_message", "text": f"tail row {n}"}) for n in range(1, 81)],
)
print("SETUP " + json.dumps({"token": token}))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    """A migrated chartr with a superuser, an API token and an agent with 60 rows, served by the entrypoint."""
    with admin_server(
        tmp_path,
        scratch_db(migrated=True, purpose="tlbrowser"),
        setup=SETUP,
        args=(AGENT,),
        CHARTR_SSE_KEEPALIVE_SECONDS="1",
    ) as (base_url, setup):
        yield base_url, setup["token"]


@pytest.fixture
def browser_page():
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="Europe/Paris")
        page = context.new_page()
        page.set_default_timeout(20_000)
        yield page


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"timeline-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 5_000


def log_in(page, base: str) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")


def watch_errors(page) -> list[str]:
    """Uncaught errors and console errors, as they come (but the browser's own guess at
    ``/favicon.ico``, which no page of chartr links to)."""
    errors: list[str] = []

    def on_console(message) -> None:
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            errors.append(f"{message.text} at {message.location.get('url')}")

    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", on_console)
    return errors


@pytest.mark.parametrize("width", [1440, 390])
def test_a_tool_call_reads_as_text_and_a_search_hit_opens_it(browser_page, server, width):
    from playwright.sync_api import expect

    base, _ = server
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    errors = watch_errors(page)
    log_in(page, base)
    page.goto(f"{base}/admin/snapshots/agentsnapshot/{AGENT}-tools/timeline/")

    # the call and its later state are one entry, showing the call as it is now, with both states
    call = page.locator("#seq-2")
    expect(page.locator("#timeline .tl-row")).to_have_count(4)
    expect(call.locator(".tl-states li")).to_have_count(2)
    expect(call.locator("details.tl-tool > summary .tl-status")).to_have_text("completed")
    expect(call.locator("details.tl-tool > summary .tl-preview")).to_have_text("pytest -q tests/")
    call.locator("details.tl-tool > summary").click()
    output = call.locator(".tl-block-text").filter(has_text="output").locator("pre").first
    expect(output).to_be_visible()
    lines = output.inner_text().split("\n")
    assert lines[:2] == ["tests/test_1.py ....  [4%]", "tests/test_2.py ....  [8%]"], lines
    assert len(lines) == 8, "folded after a few lines"
    # the middle folds; the end (where a run's summary is) shows below the fold
    expect(call.locator(".tl-fold summary").first).to_have_text("11 more lines in the middle")
    expect(call.locator("pre.tl-tail").first).to_contain_text("tests/test_25.py ....  [100%]")
    call.locator(".tl-fold summary").first.click()
    expect(call.locator(".tl-fold pre").first).to_contain_text("<script>window.__owned = true</script>")
    assert page.evaluate("window.__owned") is None, "a tool's output is shown, never run"
    # JSON is indented and coloured
    edit = page.locator("#seq-5")
    edit.locator("details.tl-tool > summary").click()
    expect(edit.locator(".tl-block-json pre").first).to_have_text(
        '{\n  "dry": false,\n  "file": "a.py",\n  "lines": [\n    1,\n    2\n  ]\n}'
    )
    expect(edit.locator(".tl-j-key").first).to_have_css("color", "rgb(122, 62, 157)")
    fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert fits, "nothing wider than the screen"
    call.scroll_into_view_if_needed()
    shot(page, "tool-call" if width > 400 else "tool-call-phone")

    # a search for a word in the folded output lands on the call, opened, the word marked
    page.fill("#tl-search", "okapi")
    page.click("#tl-search-go")
    page.wait_for_url("**#seq-4")
    hit = page.locator(".tl-hit")
    expect(hit).to_have_attribute("data-seq", "2")
    expect(hit.locator("details.tl-tool")).to_have_attribute("open", "")
    expect(hit.locator("mark.tl-mark")).to_have_text(["okapi"])
    expect(hit.locator("mark.tl-mark")).to_be_visible()
    expect(hit.locator("mark.tl-mark")).to_be_in_viewport()
    shot(page, "tool-call-search" if width > 400 else "tool-call-search-phone")
    assert not errors, errors


def append_burst(api: httpx.Client, agent_id: str, count: int, heads: list[int]) -> None:
    """``count`` appends of one row each, a few milliseconds apart; their heads into ``heads``."""
    for n in range(count):
        answer = api.post(
            f"/api/v1/agents/{agent_id}/timeline", json={"items": [{"item": {"type": "user_message", "text": f"b{n}"}}]}
        )
        assert answer.status_code in (200, 201), answer.text
        heads.append(answer.json()["head_seq"])
        time.sleep(0.015)


def shown_seqs(page) -> list[int]:
    return page.locator("#timeline .tl-row").evaluate_all("rows => rows.map(r => Number(r.dataset.seq))")


@pytest.mark.parametrize("width", [1440, 390])
def test_the_live_tail_never_loses_the_newest_row_and_shows_what_the_agent_does(browser_page, server, width):
    from playwright.sync_api import expect

    base, token = server
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    errors = watch_errors(page)
    api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    agent = f"{AGENT}-tail"
    url = f"{base}/admin/snapshots/agentsnapshot/{agent}/timeline/"
    log_in(page, base)

    # the newest page opens at its newest row
    page.goto(url)
    expect(page.locator("#tl-live-status")).to_have_text("live")
    expect(page.locator("#seq-80")).to_be_in_viewport()

    # 8 checks: rows committed while the page loads (even checks) or while it is open (odd ones)
    for check in range(8):
        heads: list[int] = []
        burst = threading.Thread(target=append_burst, args=(api, agent, 4, heads))
        burst.start()
        if check % 2 == 0:
            page.goto(url)
        burst.join()
        newest = max(heads)
        expect(page.locator(f"#seq-{newest}")).to_be_attached()
        expect(page.locator("#tl-live-status")).to_have_text("live")
        seqs = shown_seqs(page)
        assert seqs == list(range(seqs[0], newest + 1)), f"check {check}: a row is missing or doubled: {seqs}"
        expect(page.locator(f"#seq-{newest}")).to_be_in_viewport()
        expect(page.locator("#tl-head")).to_have_text(str(newest))

    # a tool call's later state replaces its entry where it stands
    started = {
        "type": "tool_call",
        "callId": "live-1",
        "name": "Bash",
        "status": "running",
        "detail": {"type": "shell", "command": "sleep 1"},
    }
    api.post(f"/api/v1/agents/{agent}/timeline", json={"items": [{"item": started}]})
    first = newest + 1
    expect(page.locator(f"#seq-{first} details.tl-tool > summary .tl-status")).to_have_text("running")
    done = {**started, "status": "completed", "detail": {"type": "shell", "command": "sleep 1", "output": "slept"}}
    api.post(f"/api/v1/agents/{agent}/timeline", json={"items": [{"item": done}]})
    expect(page.locator(f"#seq-{first} details.tl-tool > summary .tl-status")).to_have_text("completed")
    expect(page.locator(f"#seq-{first} .tl-states li")).to_have_count(2)
    expect(page.locator("#timeline .tl-row[data-item-type=tool_call]")).to_have_count(1)
    expect(page.locator(f"#seq-{first + 1}")).to_have_attribute("data-seq", str(first + 1))  # the anchor inside
    expect(page.locator("#tl-head")).to_have_text(str(first + 1))

    # the lifecycle and the attention change live, from the stream's agent events
    assert page.evaluate("() => { window.__same_page = true; return true; }")
    expect(page.locator("#tl-lifecycle")).to_have_text("initializing")
    changed = api.patch(
        f"/api/v1/agents/{agent}",
        json={"lifecycle": "running", "requires_attention": True, "attention_reason": "permission"},
    )
    assert changed.status_code == 200, changed.text
    expect(page.locator("#tl-lifecycle")).to_have_text("running")
    expect(page.locator("#tl-attention")).to_contain_text("Needs attention: permission")
    expect(page.locator("#tl-attention time")).to_contain_text(" CET")
    assert (
        api.patch(f"/api/v1/agents/{agent}", json={"lifecycle": "idle", "requires_attention": False}).status_code == 200
    )
    expect(page.locator("#tl-lifecycle")).to_have_text("idle")
    expect(page.locator("#tl-attention")).to_have_text("No attention needed")
    expect(page.locator("#tl-last-activity")).to_contain_text(" CET")
    assert page.evaluate("window.__same_page") is True, "no reload"
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "live-state" if width > 400 else "live-state-phone")
    assert not errors, errors


def test_operator_follows_searches_and_jumps_in_an_agents_timeline(browser_page, server):
    from playwright.sync_api import expect

    base, token = server
    page = browser_page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    errors = watch_errors(page)
    api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    log_in(page, base)

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
