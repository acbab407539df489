"""The console as an operator of about 50 agents meets it (issue #46), in a real browser at 1440 and 390 px.

A fleet of real shape (3 projects, 6 workspaces, 48 agents, some waiting for attention, some stale,
one with a todo list and a long test run) and a data snapshot taken before a workspace was archived
and a timeline grew. Each page is checked for what it says and that it fits, and screenshotted into
``test-artifacts/`` (listed in docs/operations.md, "Screenshots").
"""

from __future__ import annotations

import re

import pytest

from tests.process.test_console_browser import LAPTOP, PHONE, Console, fits_the_width
from tests.support.browser import PASSWORD, admin_server, chromium

pytestmark = [pytest.mark.browser, pytest.mark.process, pytest.mark.timeout(600)]

SETUP = """
import datetime as dt, json
from django.conf import settings
from django.utils import timezone
from datadir.services import take_snapshot
from registry.services import archive_workspace, create_project, create_workspace
from snapshots.models import AgentSnapshot
from snapshots.services import create_agent
from timeline.models import TimelineHead
from timeline.services import NewTimelineItem, append_timeline_items

TITLES = ["Fix refund rounding in the invoice exporter", "Migrate the search index to the new schema",
          "Upgrade Django and fix the deprecation warnings", "Write the onboarding guide for new operators"]
now = timezone.now()
workspaces, agents = [], []
for p in range(3):
    project = create_project(directory=f"/srv/fleet/app-{p}", kind="git", display_name=f"app-{p}")
    for w in range(2):
        workspaces.append(create_workspace(project=project, directory=f"/srv/fleet/app-{p}/wt-{w}",
                                           kind="worktree", display_name=f"wt-{w}"))
for n in range(48):
    agent = create_agent(workspace=workspaces[n % 6], provider="claude",
                         agent_id=f"{n:02d}3b692a-7a4d-4e8b-9c0f-5d6e7f8a9b{n:02d}", title=TITLES[n % 4] + f" #{n}",
                         lifecycle="running" if n % 3 else "idle", requires_attention=n % 5 == 0,
                         attention_reason="permission" if n % 10 == 0 else ("finished" if n % 5 == 0 else None),
                         attention_at=now - dt.timedelta(minutes=7 * n) if n % 5 == 0 else None)
    agents.append(agent.agent_id)
    append_timeline_items(agent_id=agent.agent_id, items=[NewTimelineItem(item={"type": "user_message", "text": f"go {n}"})])
# running agents outside the workspace archived below, silent for three hours
stale = [agent for n, agent in enumerate(agents) if n % 3 and n % 6 != 5][:5]
AgentSnapshot.objects.filter(pk__in=stale).update(last_seen_at=now - dt.timedelta(hours=3))
TimelineHead.objects.filter(agent_id__in=stale).update(last_appended_at=now - dt.timedelta(hours=3))
run = "\\n".join([f"tests/test_{k}.py::test_case PASSED" for k in range(60)]
                 + ["=== short test summary info ===", "FAILED tests/test_refund.py::test_rounding - assert 0.01 == 0",
                    "=== 1 failed, 60 passed in 4.2s ==="])
append_timeline_items(agent_id=agents[0], items=[
    NewTimelineItem(item={"type": "todo", "items": [
        {"text": "Reproduce the off-by-a-cent refund", "completed": True},
        {"text": "Round half to even in the exporter", "completed": True},
        {"text": "Run the whole suite", "completed": False},
        {"text": "Open the pull request", "completed": False}]}),
    NewTimelineItem(item={"type": "tool_call", "callId": "run-1", "name": "shell", "status": "completed",
                          "detail": {"type": "shell", "command": "pytest -q", "output": run, "exitCode": 1}}),
])
snap = take_snapshot(reason="manual", note="before the archive")
archive_workspace(workspace=workspaces[5])
append_timeline_items(agent_id=agents[0], items=[NewTimelineItem(item={"type": "assistant_message", "text": "the refund rounding is fixed"})])
settings.CONFIG_DIR.mkdir(parents=True, exist_ok=True)  # settings write nothing; migrate or a start would
(settings.CONFIG_DIR / "initial-admin-password").write_text(__import__("sys").argv[1] + "\\n")
print("SETUP " + json.dumps({"agents": agents, "snapshot": snap.name, "archived": "wt-1 (app-2)",
                          "stale": len(stale)}))
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, migrated_templates):
    from tests.support.processes import ScratchDatabase, run_engine

    root = tmp_path_factory.mktemp("fleet")
    template = migrated_templates.get(run_engine())
    database = ScratchDatabase(run_engine(), root, purpose="fleet", template=template).create()
    try:
        with admin_server(root, database, setup=SETUP, args=(PASSWORD,)) as (base_url, setup):
            yield base_url, setup
    finally:
        database.drop()


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


def inside(page, locator) -> None:
    """The element is wholly on the screen's width."""
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (box, width)


def no_sideways_scroll(page, selector: str) -> None:
    fits_the_width(page)
    widths = page.evaluate(f"[...document.querySelectorAll('{selector}')].map(e => [e.scrollWidth, e.clientWidth])")
    assert widths and all(scroll <= client + 1 for scroll, client in widths), widths


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["1440", "390"])
def test_the_restore_preview_and_the_snapshot_list_speak_in_records(browser, fleet, viewport):
    from playwright.sync_api import expect

    base, setup = fleet
    suffix = "" if viewport is LAPTOP else "-phone"
    console = Console(browser, base, viewport).log_in()
    page = console.page
    console.goto("/admin/data-snapshots/")
    row = page.locator("#data-snapshots tbody tr", has_text=setup["snapshot"])
    expect(row.locator(".snapshot-holds")).to_contain_text("3 projects, 6 workspaces, 48 agents")
    expect(page.locator("#data-snapshots")).not_to_contain_text("timeline_row")
    link = row.locator(".restore-link")
    inside(page, link)
    no_sideways_scroll(page, "#changelist, #data-snapshots")
    console.shot(f"data-snapshots{suffix}.png", full_page=False)
    link.click()
    records = page.locator("#restore-records")
    expect(page.locator("#restore-unarchived")).to_contain_text(f"Workspace {setup['archived']}")
    expect(page.locator("#restore-unarchived")).to_contain_text("Agent Write the onboarding guide")
    expect(page.locator("#restore-timelines")).to_contain_text("Fix refund rounding in the invoice exporter #0")
    expect(page.locator("#restore-timelines")).to_contain_text("4 rows now, 3 after the restore")
    expect(records).not_to_contain_text("registry_")
    fits_the_width(page)
    console.shot(f"restore-records{suffix}.png")
    assert console.errors == []


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["1440", "390"])
def test_lists_fit_and_say_how_long_agents_have_waited(browser, fleet, viewport):
    from playwright.sync_api import expect

    base, setup = fleet
    phone = viewport is PHONE
    suffix = "-phone" if phone else ""
    console = Console(browser, base, viewport).log_in()
    page = console.page

    console.goto("/admin/snapshots/agentsnapshot/?attention=any")
    expect(page.locator("#result_list")).to_contain_text("permission")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(8)  # 10 waited; the two in the archived workspace are archived with it
    first = rows.first
    for cell in (
        ".action-checkbox input",
        ".field-agent .agent-title",
        ".field-lifecycle",
        ".field-waiting_since time",
    ):
        inside(page, first.locator(cell))
    # the longest waiting first: agent 45, for 7 x 45 minutes
    expect(first.locator(".field-waiting_since time")).to_have_text(re.compile(r"^5\xa0hours, 1[5-9]\xa0minutes$"))
    title = first.locator(".field-agent .agent-title")
    assert title.evaluate("el => getComputedStyle(el).textOverflow") == "ellipsis"
    assert title.evaluate("el => el.scrollWidth > el.clientWidth"), "a long title is cut short, with its ellipsis"
    no_sideways_scroll(page, "#changelist .results")
    console.shot(f"agent-list-waiting{suffix}.png", full_page=False)
    if phone:
        # a card per agent, short enough for eight agents or more a screen (a table row held about five)
        heights = page.evaluate("[...document.querySelectorAll('#result_list tbody tr')].map(r => r.offsetHeight)")
        assert max(heights) * 8 <= viewport["height"], heights
    else:
        headers = page.locator("#result_list thead th").all_inner_texts()
        assert "WAITING SINCE" in " ".join(headers).upper().replace("\n", " ")
        assert not any(h.strip().upper() == "STATE" for h in headers)

    console.goto("/admin/")
    stale = page.locator("#dash-stale")
    expect(stale.locator("h2")).to_contain_text(f"Stale running agents ({setup['stale']})")
    inside(page, page.locator("#dash-stale-all"))
    inside(page, page.locator("#dash-attention tbody tr").first.locator(".dash-agent a"))
    no_sideways_scroll(page, "#dash-attention, #dash-stale")
    # the reminder to change the first start's password and delete its file, on every page
    expect(page.locator("#initial-password-reminder")).to_contain_text("change your password")
    console.shot(f"dashboard-stale{suffix}.png")
    page.click("#dash-stale-all")
    expect(page.locator("#result_list tbody tr")).to_have_count(setup["stale"])
    assert console.errors == []


def test_a_timeline_reads_as_todos_and_a_test_run(browser, fleet):
    from playwright.sync_api import expect

    base, setup = fleet
    for viewport, suffix in ((LAPTOP, ""), (PHONE, "-phone")):
        console = Console(browser, base, viewport).log_in()
        page = console.page
        console.goto(f"/admin/snapshots/agentsnapshot/{setup['agents'][0]}/timeline/")
        expect(page.locator("h1")).to_have_text("Timeline of Fix refund rounding in the invoice exporter #0 · 003b692a")
        todo = page.locator(".tl-row.tl-todo")
        expect(todo.locator(".tl-todo-count")).to_have_text("2 of 4 done")
        done = todo.locator("li.tl-todo-done .tl-todo-text").first
        assert "line-through" in done.evaluate("el => getComputedStyle(el).textDecorationLine")
        expect(todo.locator("li.tl-todo-open")).to_have_count(2)
        call = page.locator(".tl-row.tl-tool_call")
        call.locator("details.tl-tool > summary").click()
        tail = call.locator("pre.tl-tail")
        expect(tail).to_be_visible()
        expect(tail).to_contain_text("FAILED tests/test_refund.py::test_rounding")
        expect(call.locator(".tl-fold summary").first).to_have_text("47 more lines in the middle")
        assert "mono" in tail.evaluate("el => getComputedStyle(el).fontFamily").lower()
        fits_the_width(page)
        call.scroll_into_view_if_needed()
        console.shot(f"timeline-todo-tool{suffix}.png")

        console.goto("/admin/search/?q=rounding")
        result = page.locator(".fs-result").first
        expect(result.locator(".fs-snippet mark")).to_have_text("rounding")
        expect(result).to_contain_text("wt-0 (app-0)")
        expect(result.locator(".agent-short-id")).to_have_text("003b692a")
        fits_the_width(page)
        console.shot(f"fleet-search-snippet{suffix}.png")
        assert console.errors == []
