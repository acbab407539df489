"""A Claude Code session in the admin, in a real browser against a real server, at 1440 and 390 px.

The session (tests/claude_code/home.py's, brought in by ``manage.py import_claude_code``) reads as a
conversation on its timeline page: the prompt, the thinking, the Bash call paired with its result
(one entry, both states, the output as monospace text), the failed Read marked failed, the answer;
a row's untouched record opens with one click. A ``PermissionRequest`` hook sent through the API
puts the session in the dashboard's attention list with what it asks. Nothing is wider than the
screen and no page logs an error. Screenshots: ``test-artifacts/claude-code-*.png``.
"""

from __future__ import annotations

import httpx
import pytest

from tests.claude_code import home as claude_home
from tests.process.test_timeline_browser import browser_page, log_in, watch_errors  # noqa: F401 - a fixture
from tests.support.browser import ARTIFACTS, admin_server

pytestmark = [pytest.mark.browser, pytest.mark.process]

SETUP = """
import json, sys
from django.core.management import call_command
from tokens.services import create_api_token
from claude_code.keys import SessionKey
call_command("import_claude_code", sys.argv[-1])
key = SessionKey(sys.argv[-3], sys.argv[-2])
print("SETUP " + json.dumps({"token": create_api_token(name="hooks")[1], "agent": key.agent_id}))
"""


@pytest.fixture
def server(tmp_path, scratch_db):
    projects = claude_home.write_home(tmp_path / "claude")
    database = scratch_db(migrated=True, purpose="ccbrowser")
    with admin_server(
        tmp_path, database, setup=SETUP, args=(claude_home.PROJECT_KEY, claude_home.SESSION_ID, str(projects))
    ) as (base_url, setup):
        yield base_url, setup, projects


def shot(page, name: str, width: int) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"claude-code-{name}{'' if width > 400 else '-phone'}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 5_000


@pytest.mark.parametrize("width", [1440, 390])
def test_a_claude_code_session_reads_as_a_conversation_and_waits_live(browser_page, server, width):  # noqa: F811
    from playwright.sync_api import expect

    base, setup, projects = server
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    errors = watch_errors(page)
    log_in(page, base)
    page.goto(f"{base}/admin/snapshots/agentsnapshot/{setup['agent']}/timeline/")

    # Rows: 1 file-history-snapshot, 2 prompt, 3 thinking, 4 Bash call, 5 its result, 6 Read call,
    # 7 its failed result, 8 answer, 9 compaction, 10 summary, 11 custom-title.
    expect(page.locator("#seq-2")).to_contain_text("List the files and tell me what the shop does.")
    expect(page.locator("#seq-3")).to_contain_text("I should run ls first.")
    expect(page.locator("#seq-8")).to_contain_text("The shop sells teapots")
    call = page.locator("#seq-4")
    expect(call.locator(".tl-states li")).to_have_count(2)
    expect(call.locator("details.tl-tool > summary .tl-status")).to_have_text("completed")
    expect(call.locator("details.tl-tool > summary .tl-preview")).to_contain_text("ls -la")
    call.locator("details.tl-tool > summary").click()
    output = call.locator(".tl-block-text").filter(has_text="output").locator("pre").first
    expect(output).to_have_text("README.md\nshop.py\n")
    assert output.evaluate("e => e.tagName") == "PRE"  # (operator46's b63b277 sets tool values monospace)
    expect(page.locator("#seq-6 details.tl-tool > summary .tl-status")).to_have_text("failed")

    # the untouched record, one click away
    record = page.locator("#seq-8 details.tl-record")
    expect(record.locator("pre").first).not_to_be_visible()
    record.locator("> summary").click()
    expect(record.locator("pre").first).to_contain_text('"requestId"')
    # (the page's h1 names the whole 52-character agent id until operator46's 414238b shortens it)
    fits = page.evaluate("(e => e.scrollWidth <= e.clientWidth + 1)(document.getElementById('timeline'))")
    assert fits, "no entry is wider than the screen"
    shot(page, "timeline", width)

    # the hook Claude Code runs on a permission prompt: the dashboard says who waits, for what
    answer = httpx.post(
        f"{base}/api/v1/claude-code/hooks",
        headers={"Authorization": f"Bearer {setup['token']}"},
        json={
            "session_id": claude_home.SESSION_ID,
            "transcript_path": f"{projects}/{claude_home.PROJECT_KEY}/{claude_home.SESSION_ID}.jsonl",
            "cwd": claude_home.CWD,
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf build"},
        },
        timeout=20,
    )
    assert answer.status_code == 200, answer.text
    page.goto(f"{base}/admin/")
    row = page.locator(f'tr[data-agent="{setup["agent"]}"]')
    expect(row).to_contain_text("permission")
    expect(row).to_contain_text("Claude wants to use Bash: rm -rf build")
    shot(page, "attention", width)
    assert not errors, errors
