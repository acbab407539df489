from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import strip_tags

from tests.factories import AgentFactory
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db


def add_rows(agent, items: list[dict]) -> None:
    start = agent.timeline_head.head_seq
    now = timezone.now()
    TimelineRow.objects.bulk_create(
        TimelineRow(agent=agent, seq=start + i, committed_at=now, item_type=item.get("type", ""), item=item)
        for i, item in enumerate(items, start=1)
    )
    agent.timeline_head.head_seq = start + len(items)
    TimelineHead.objects.filter(pk=agent.pk).update(head_seq=agent.timeline_head.head_seq)


def shown_seqs(response) -> list[int]:
    return [int(seq) for seq in re.findall(r'data-seq="(\d+)"', response.content.decode())]


def change_url(agent, **params) -> str:
    """The agent's timeline page (its own admin page since issue 16)."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("admin:snapshots_agentsnapshot_timeline", args=[agent.pk]) + (f"?{query}" if query else "")


@pytest.fixture
def long_agent():
    agent = AgentFactory()
    add_rows(agent, [{"type": "user_message", "text": f"message {n}"} for n in range(1, 121)])
    return agent


class TestAgentTimeline:
    @pytest.mark.parametrize("bad", ["\u00b2", "-3", "abc", ""])
    def test_a_cursor_that_is_not_a_plain_number_shows_the_newest(self, admin_client, long_agent, bad):
        response = admin_client.get(change_url(long_agent, before_seq=bad))
        assert response.status_code == 200
        assert shown_seqs(response) == list(range(71, 121))

    def test_shows_the_newest_50_in_ascending_order(self, admin_client, long_agent):
        response = admin_client.get(change_url(long_agent))
        assert shown_seqs(response) == list(range(71, 121))
        text = response.content.decode()
        assert "?before_seq=71" in text and "tl-newer" not in text

    def test_pages_older_and_newer_by_seq(self, admin_client, long_agent):
        older = admin_client.get(change_url(long_agent, before_seq=71))
        assert shown_seqs(older) == list(range(21, 71))
        text = older.content.decode()
        assert "?before_seq=21" in text and "?after_seq=70" in text

        oldest = admin_client.get(change_url(long_agent, before_seq=21))
        assert shown_seqs(oldest) == list(range(1, 21))
        assert "tl-older" not in oldest.content.decode()

        newer = admin_client.get(change_url(long_agent, after_seq=20))
        assert shown_seqs(newer) == list(range(21, 71))
        assert shown_seqs(admin_client.get(change_url(long_agent, after_seq=100))) == list(range(101, 121))

    def test_edges_and_bad_cursors(self, admin_client, long_agent):
        beyond = admin_client.get(change_url(long_agent, after_seq=500))
        assert shown_seqs(beyond) == [] and "in this range" in beyond.content.decode()
        assert shown_seqs(admin_client.get(change_url(long_agent, before_seq=1))) == []
        assert shown_seqs(admin_client.get(change_url(long_agent, before_seq="abc"))) == list(range(71, 121))
        assert shown_seqs(admin_client.get(change_url(long_agent, after_seq=-3))) == list(range(71, 121))

    def test_empty_timeline(self, admin_client):
        agent = AgentFactory()
        response = admin_client.get(change_url(agent))
        assert response.status_code == 200 and "No timeline rows." in response.content.decode()

    def test_each_item_type_is_rendered_by_its_type(self, admin_client):
        agent = AgentFactory()
        add_rows(
            agent,
            [
                {"type": "user_message", "text": "please <fix> it"},
                {"type": "assistant_message", "text": "On it."},
                {"type": "reasoning", "text": "thinking about it"},
                {"type": "tool_call", "callId": "c-1", "name": "bash", "status": "failed", "input": {"cmd": "make"}},
                {
                    "type": "todo",
                    "items": [
                        {"content": "write tests", "status": "completed"},
                        "plain todo",
                        {"text": "ship it", "completed": True},
                        {"text": "review it", "completed": False},
                        {"content": "fix it", "status": "in_progress"},
                    ],
                },
                {"type": "interaction", "request": {"question": "Allow write?"}},
                {"type": "error", "message": "rate limited"},
                {"type": "compaction", "status": "done"},
                {"type": "future_thing", "payload": [1, 2]},
            ],
        )
        text = admin_client.get(change_url(agent)).content.decode()
        assert "<strong>User</strong>" in text and "please &lt;fix&gt; it" in text
        assert "<strong>Assistant</strong>" in text and "On it." in text
        assert "<em>Reasoning</em>" in text
        assert "<code>bash</code>" in text and 'tl-status-failed">failed<' in text and "call c-1" in text
        plain = html.unescape(strip_tags(text))
        assert '"cmd": "make"' in plain  # the rest of a tool call is shown as JSON
        # done and open todos read differently, whichever way the item says so (Paseo's `completed` flag, a status)
        todos = re.findall(r'<li class="tl-todo-(\w+)">.*?<span class="tl-todo-text">(.*?)</span></li>', text)
        assert todos == [
            ("done", "write tests"),
            ("open", "plain todo"),
            ("done", "ship it"),
            ("open", "review it"),
            ("active", "fix it"),
        ]
        assert '<span class="tl-todo-count">2 of 5 done</span>' in text
        assert "Interaction request" in text and "Allow write?" in text
        assert "Error</strong>" in text and "rate limited" in text
        assert '<strong>Compaction</strong> <span class="tl-status">done</span>' in text
        assert "<strong>future_thing</strong>" in text and "payload\n" in plain and "[\n  1,\n  2\n]" in plain

    def test_malformed_items_do_not_break_the_page(self, admin_client):
        agent = AgentFactory()
        add_rows(
            agent, [{"type": "tool_call"}, {"type": "todo", "items": "not a list"}, {"type": "user_message", "text": 5}]
        )
        response = admin_client.get(change_url(agent))
        assert response.status_code == 200 and shown_seqs(response) == [1, 2, 3]

    def test_huge_items_are_cut(self, admin_client):
        agent = AgentFactory()
        add_rows(agent, [{"type": "assistant_message", "text": "x" * 50_000}])
        text = admin_client.get(change_url(agent)).content.decode()
        assert "x" * 20_000 in text and "x" * 20_001 not in text and "cut to the first 20000 characters" in text

    def test_archived_agent_timeline_stays_readable(self, admin_client, long_agent):
        from snapshots.services import archive_agent

        archive_agent(agent=long_agent)
        assert shown_seqs(admin_client.get(change_url(long_agent))) == list(range(71, 121))

    def test_reading_the_timeline_costs_the_same_for_long_and_short_histories(self, admin_client, long_agent):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        short = AgentFactory()
        add_rows(short, [{"type": "user_message", "text": "hi"}] * 3)
        counts = []
        for agent in (short, long_agent):
            with CaptureQueriesContext(connection) as ctx:
                admin_client.get(change_url(agent, before_seq=60))
            counts.append(len(ctx.captured_queries))
        assert counts[0] == counts[1]


class TestTimelineRowAdmin:
    def test_rows_are_read_only_even_for_superusers(self, admin_client, long_agent):
        row = TimelineRow.objects.get(agent=long_agent, seq=1)
        changelist = admin_client.get(reverse("admin:timeline_timelinerow_changelist"))
        assert changelist.status_code == 200
        assert admin_client.get(reverse("admin:timeline_timelinerow_add")).status_code == 403
        view = admin_client.get(reverse("admin:timeline_timelinerow_change", args=[row.pk]))
        assert view.status_code == 200 and "message 1" in view.content.decode()
        changed = admin_client.post(reverse("admin:timeline_timelinerow_change", args=[row.pk]), {"item_type": "x"})
        assert changed.status_code == 403
        assert (
            admin_client.post(reverse("admin:timeline_timelinerow_delete", args=[row.pk]), {"post": "yes"}).status_code
            == 403
        )
        assert "delete_selected" not in changelist.content.decode()
        row.refresh_from_db()
        assert row.item_type == "user_message" and TimelineRow.objects.count() == 120

    def test_search_by_agent_id(self, admin_client, long_agent):
        other = AgentFactory()
        add_rows(other, [{"type": "user_message", "text": "x"}])
        response = admin_client.get(reverse("admin:timeline_timelinerow_changelist"), {"q": other.agent_id})
        assert [row.agent_id for row in response.context["cl"].result_list] == [other.agent_id]

    def test_a_rows_page_shows_its_earlier_versions_read_only(self, admin_client, long_agent):
        from timeline.writes.revisions import RowContent, update_row

        update_row(agent_id=long_agent.pk, seq=1, content=RowContent(item={"type": "user_message", "text": "second"}))
        update_row(agent_id=long_agent.pk, seq=1, content=RowContent(item={"type": "user_message", "text": "third"}))
        row = TimelineRow.objects.get(agent=long_agent, seq=1)
        page = admin_client.get(reverse("admin:timeline_timelinerow_change", args=[row.pk]))
        text = page.content.decode()
        assert page.status_code == 200 and "earlier versions" in text.lower()
        assert "third" in text and "second" in text and "message 1" in text
        inline = page.context["inline_admin_formsets"][0]
        assert [form.original.revision for form in inline] == [1, 2]
        assert not inline.has_add_permission and not inline.has_delete_permission
