"""Claude Code transcripts on the admin's timeline page: a conversation, tool calls paired with their
results, the raw record one click away; and the fleet search finds their text."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from claude_code.keys import SessionKey
from claude_code.services import append_entries
from tests.claude_code import home as claude_home

pytestmark = pytest.mark.django_db

KEY = SessionKey(claude_home.PROJECT_KEY, claude_home.SESSION_ID)


@pytest.fixture
def page(admin_client) -> str:
    append_entries(KEY, claude_home.main_session())
    response = admin_client.get(reverse("admin:snapshots_agentsnapshot_timeline", args=[KEY.agent_id]))
    assert response.status_code == 200
    return response.content.decode()


def entry_of(page: str, seq: int) -> str:
    """The HTML of the entry anchored at ``seq``."""
    start = page.index(f'id="seq-{seq}"')
    end = page.find('<div class="tl-row', start)
    return page[start : end if end != -1 else len(page)]


def test_user_and_assistant_text_and_thinking_read_as_a_conversation(page):
    # Rows (seq): 1 file-history-snapshot, 2 prompt, 3 thinking, 4 Bash call, 5 its result,
    # 6 Read call, 7 its failed result, 8 answer, 9 compaction, 10 summary, 11 custom-title.
    assert "<strong>User</strong>" in entry_of(page, 2)
    assert "List the files and tell me what the shop does." in entry_of(page, 2)
    assert "<em>Reasoning</em>" in entry_of(page, 3) and "I should run ls first." in entry_of(page, 3)
    assert "<strong>Assistant</strong>" in entry_of(page, 8) and "The shop sells teapots" in entry_of(page, 8)
    assert "<strong>Compaction</strong>" in entry_of(page, 9)
    assert 'data-item-type="claude_code.assistant"' in entry_of(page, 8)


def test_a_tool_use_pairs_with_its_result_and_errors_are_marked(page):
    bash = entry_of(page, 4)
    assert "<strong>Tool call</strong> <code>Bash</code>" in bash
    assert "tl-status-completed" in bash and 'data-seq="5"' in bash  # both rows, one entry
    assert "README.md" in bash and "ls -la" in bash
    assert 'id="seq-5"' in bash  # the result's row is an anchor inside the call's entry
    read = entry_of(page, 6)
    assert "tl-status-failed" in read and "File does not exist." in html.unescape(read)
    assert len(re.findall(r'<div class="tl-row tl-tool_call', page)) == 2


def test_the_raw_record_is_one_click_away(page):
    answer = entry_of(page, 8)
    assert '<details class="tl-record"><summary>Raw record</summary>' in answer
    assert "requestId" in answer and "msg_01MNOPQR" in answer
    bash = entry_of(page, 4)
    assert "Raw record #4" in bash and "Raw record #5" in bash and "toolUseResult" in bash
    title = entry_of(page, 11)  # a record with nothing to read: its type and the record
    assert "<strong>claude_code.custom-title</strong>" in title and "Shop tour" in title


def test_a_line_of_several_blocks_shows_each_with_its_own_anchor(admin_client):
    record = claude_home.user(
        "u-x",
        None,
        [{"type": "tool_result", "tool_use_id": "t9", "content": "done"}, {"type": "text", "text": "next step"}],
    )
    append_entries(KEY, [record])
    page = admin_client.get(reverse("admin:snapshots_agentsnapshot_timeline", args=[KEY.agent_id])).content.decode()
    assert 'id="seq-1"' in page and 'id="seq-1-1"' in page
    assert "next step" in entry_of(page, "1-1")


def test_the_fleet_search_finds_their_text(admin_client, page):
    response = admin_client.get("/admin/search/", {"q": "teapots"})
    assert f'data-agent-id="{KEY.agent_id}"' in response.content.decode()
