"""Codex threads on the admin's timeline page: a conversation, function calls paired with their outputs
(exit codes shown, failures marked), reasoning summaries, the raw record one click away; and the
fleet search finds their text."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from tests.codex.builders import LIVE
from tests.codex.conftest import run

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(admin_client, home) -> str:
    run("import_codex", next(home.root.rglob(f"*{LIVE}.jsonl")))
    response = admin_client.get(reverse("admin:snapshots_agentsnapshot_timeline", args=[LIVE]))
    assert response.status_code == 200
    return response.content.decode()


def entry_of(page: str, seq: int) -> str:
    """The HTML of the entry anchored at ``seq``."""
    start = page.index(f'id="seq-{seq}"')
    end = page.find('<div class="tl-row', start)
    return page[start : end if end != -1 else len(page)]


# Rows (seq): 1 session_meta, 2 turn_context, 3 injected environment context, 4 the prompt,
# 5 its event_msg, 6 reasoning, 7 shell call, 8 its output (exit 0), 9 shell call, 10 its output
# (exit 1), 11 apply_patch, 12 its output, 13 local_shell_call, 14 the answer, 15 its event_msg,
# 16 token_count.


def test_messages_and_reasoning_read_as_a_conversation(page):
    prompt = entry_of(page, 4)
    assert "<strong>User</strong>" in prompt and "Run the tests" in prompt
    assert 'data-item-type="codex.response_item"' in prompt
    assert "<em>Reasoning</em>" in entry_of(page, 6) and "Looking at the tests" in entry_of(page, 6)
    answer = entry_of(page, 14)
    assert "<strong>Assistant</strong>" in answer and "Done: the tests pass." in answer
    # What Codex injects, and the events that repeat the conversation, read as their record's type.
    assert "<strong>User</strong>" not in entry_of(page, 3)
    assert "<strong>codex.event_msg</strong>" in entry_of(page, 5)


def test_a_function_call_pairs_with_its_output_and_the_exit_code_shows(page):
    passing = entry_of(page, 7)
    assert "<strong>Tool call</strong> <code>shell</code>" in passing
    assert "tl-status-completed" in passing and 'id="seq-8"' in passing
    assert "3 passed" in passing and "pytest -q" in html.unescape(passing)
    failing = entry_of(page, 9)
    assert "tl-status-failed" in failing and 'id="seq-10"' in failing
    assert '<span class="tl-label">exitCode</span> <code class="tl-json"><span class="tl-j-num">1</span>' in failing
    assert '<span class="tl-label">exitCode</span> <code class="tl-json"><span class="tl-j-num">0</span>' in passing
    assert "<code>apply_patch</code>" in entry_of(page, 11) and "tl-status-completed" in entry_of(page, 11)


def test_the_raw_record_is_one_click_away(page):
    answer = entry_of(page, 14)
    assert '<details class="tl-record"><summary>Raw record</summary>' in answer
    assert "output_text" in answer
    call = entry_of(page, 9)
    assert "Raw record #9" in call and "Raw record #10" in call and "duration_seconds" in html.unescape(call)
    meta = entry_of(page, 1)
    assert "<strong>codex.session_meta</strong>" in meta and "codex_cli_rs" in meta


def test_the_fleet_search_finds_their_text(admin_client, page):
    response = admin_client.get("/admin/search/", {"q": "passed"})
    assert f'data-agent-id="{LIVE}"' in response.content.decode()
