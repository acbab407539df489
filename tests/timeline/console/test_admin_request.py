"""The agent's change page shows what it waits on, as text: its attention and its newest interaction request."""

from __future__ import annotations

import html

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import AgentFactory
from timeline.console.request import describe_request, outline
from timeline.services import NewTimelineItem, append_timeline_items

#: An interaction as a Paseo daemon sends a permission request (its AgentPermissionRequest).
PERMISSION = {
    "id": "perm-7",
    "provider": "claude",
    "name": "Bash",
    "kind": "tool",
    "title": "Run a shell command",
    "description": "Claude wants to run:\nmake test",
    "input": {"command": "make test", "timeout": 600, "env": {"CI": "1"}, "background": False},
    "actions": [
        {"id": "allow", "label": "Allow", "behavior": "allow"},
        {"id": "deny", "label": "Deny", "behavior": "deny"},
    ],
    "metadata": {"toolUseId": "toolu_1"},
}


class TestDescribeRequest:
    def test_a_paseo_permission_request_reads_as_text(self):
        described = describe_request(PERMISSION)
        assert described.heading == "Run a shell command · Bash"
        assert described.kind == "permission to use a tool"
        blocks = dict(described.blocks)
        assert list(blocks) == ["Description", "Input", "Choices", "More", "Request"]
        assert blocks["Description"] == "Claude wants to run:\nmake test"
        assert blocks["Input"] == "command: make test\ntimeout: 600\nenv:\n  CI: 1\nbackground: no"
        assert blocks["Choices"] == "- Allow (allow)\n- Deny (deny)"
        assert blocks["More"] == "metadata:\n  toolUseId: toolu_1"
        assert blocks["Request"] == "id: perm-7\nprovider: claude"

    def test_a_question_keeps_its_options_and_line_breaks(self):
        question = {
            "kind": "question",
            "name": "AskUserQuestion",
            "input": {"questions": [{"question": "Which database?\n(pick one)", "options": [{"label": "PostgreSQL"}]}]},
        }
        described = describe_request(question)
        assert described.kind == "an answer to a question"
        assert dict(described.blocks)["Input"] == (
            "questions:\n  - question: Which database?\n      (pick one)\n    options:\n      - label: PostgreSQL"
        )

    def test_any_other_value_is_outlined_not_dumped(self):
        assert describe_request("Allow write?").blocks == [("Request", "Allow write?")]
        described = describe_request({"question": "Allow write?", "paths": ["/a", "/b"]})
        assert described.heading == "Request"
        assert described.blocks == [("More", "question: Allow write?\npaths:\n  - /a\n  - /b")]
        assert outline({}) == "(empty)" and outline([]) == "(none)" and outline(None) == "(none)"

    def test_a_long_block_is_cut(self):
        described = describe_request({"description": "x" * 9_000})
        assert len(described.blocks[0][1]) == 5_000 and described.truncated


@pytest.mark.django_db
class TestAgentPage:
    def change_page(self, client, agent) -> str:
        response = client.get(reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk]))
        assert response.status_code == 200
        return response.content.decode()

    def test_the_request_the_agent_waits_on_is_shown_as_text_above_the_form(self, admin_client):
        agent = AgentFactory(requires_attention=True, attention_reason="permission")
        append_timeline_items(
            agent_id=agent.pk,
            items=[
                NewTimelineItem(item={"type": "interaction", "request": {"name": "Old"}}),
                NewTimelineItem(item={"type": "user_message", "text": "go"}),
                NewTimelineItem(item={"type": "interaction", "request": PERMISSION}),
            ],
        )
        page = self.change_page(admin_client, agent)
        top = page.split('id="agent-request"')[1].split("</div>\n</div>")[0]
        assert page.index('id="agent-attention"') < page.index('id="agent-request"') < page.index("<fieldset")
        assert "Needs attention: permission" in page
        assert "Waiting on this request" in top and "Run a shell command · Bash" in top
        assert "asks for permission to use a tool" in top
        assert "command: make test\ntimeout: 600" in html.unescape(top)
        assert '"command"' not in html.unescape(top) and "Old" not in top
        timeline = reverse("admin:snapshots_agentsnapshot_timeline", args=[agent.pk])
        assert f'href="{timeline}?seq=3">#3</a>' in top

    def test_without_attention_it_is_the_latest_request_and_without_one_nothing(self, admin_client):
        agent = AgentFactory()
        assert 'id="agent-request"' not in self.change_page(admin_client, agent)
        assert 'id="agent-attention"' not in self.change_page(admin_client, agent)
        append_timeline_items(
            agent_id=agent.pk, items=[NewTimelineItem(item={"type": "interaction", "request": "Allow write?"})]
        )
        page = self.change_page(admin_client, agent)
        assert "Latest interaction request" in page and "Waiting on this request" not in page
        assert "Allow write?" in page

    def test_the_request_costs_one_query_whatever_the_history(self, admin_client):
        agent = AgentFactory(requires_attention=True)

        def queries() -> int:
            with CaptureQueriesContext(connection) as ctx:
                self.change_page(admin_client, agent)
            return len(ctx.captured_queries)

        append_timeline_items(
            agent_id=agent.pk, items=[NewTimelineItem(item={"type": "interaction", "request": PERMISSION})]
        )
        few = queries()
        append_timeline_items(
            agent_id=agent.pk,
            items=[NewTimelineItem(item={"type": "interaction", "request": {"n": n}}) for n in range(30)],
        )
        assert queries() == few
