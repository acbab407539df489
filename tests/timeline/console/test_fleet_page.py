"""The fleet search's admin page: results grouped by agent linking to their rows, filters, paging, refusals."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from django.urls import reverse

from tests.factories import AgentFactory, WorkspaceFactory
from timeline.console import fleet_page
from timeline.models import TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

URL = "/admin/search/"
START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def say(agent, *texts: str, at: dt.datetime) -> None:
    append_timeline_items(
        agent_id=agent.pk, items=[NewTimelineItem(item={"type": "user_message", "text": t}) for t in texts]
    )
    for row in TimelineRow.objects.filter(agent=agent):
        TimelineRow.objects.filter(pk=row.pk).update(committed_at=at + dt.timedelta(minutes=row.seq))


@pytest.fixture
def agents():
    workspace = WorkspaceFactory(display_name="frontend")
    old = AgentFactory(workspace=workspace, title="Old agent")
    new = AgentFactory(title="New agent")
    say(old, "the heron flies", "nothing", "a heron lands", at=START)
    say(new, "heron", at=START + dt.timedelta(days=1))
    return old, new


def rows(response) -> list[tuple[str, int]]:
    text = response.content.decode()
    agents = re.findall(r'<tr class="fs-result" data-agent-id="([^"]+)">', text)
    counts = [int(n) for n in re.findall(r'<td class="fs-count">(\d+)</td>', text)]
    return list(zip(agents, counts))


def test_results_grouped_by_agent_newest_first_linking_to_the_newest_match(admin_client, agents):
    old, new = agents
    response = admin_client.get(URL, {"q": "heron"})
    assert response.status_code == 200
    assert rows(response) == [(new.pk, 1), (old.pk, 2)]
    text = unescape(response.content.decode())
    timeline = reverse("admin:snapshots_agentsnapshot_timeline", args=[old.pk])
    assert f'href="{timeline}?q=heron&around=3#seq-3"' in text
    assert "Old agent" in text and "frontend" in text
    # The link lands on the row, with the timeline page's own search going on from it.
    landed = admin_client.get(f"{timeline}?q=heron&around=3")
    landed_text = landed.content.decode()
    assert 'id="seq-3"' in landed_text and "tl-prev-match" in landed_text


def test_filters_by_project_workspace_type_and_time(admin_client, agents):
    old, new = agents
    assert rows(admin_client.get(URL, {"q": "heron", "workspace": old.workspace_id})) == [(old.pk, 2)]
    assert rows(admin_client.get(URL, {"q": "heron", "project": new.workspace.project_id})) == [(new.pk, 1)]
    assert rows(admin_client.get(URL, {"q": "heron", "type": ["tool_call"]})) == []
    assert rows(admin_client.get(URL, {"q": "heron", "type": ["user_message", "tool_call"]})) == [
        (new.pk, 1),
        (old.pk, 2),
    ]
    # Times are the operator's: 13:02 in Paris is 12:02 UTC, after the old agent's first heron.
    in_paris = {"q": "heron", "since": "2026-03-01T13:02", "until": "2026-03-02T00:00", "tz": "Europe/Paris"}
    response = admin_client.get(URL, in_paris)
    assert rows(response) == [(old.pk, 1)]
    assert "Europe/Paris" in response.content.decode()
    none = admin_client.get(URL, {"q": "heron", "type": ["tool_call"]}).content.decode()
    assert 'id="fs-none"' in none and "with these filters" in none


def test_next_page_carries_the_cursor(admin_client, agents, monkeypatch):
    old, new = agents
    monkeypatch.setattr(fleet_page, "PAGE_SIZE", 1)
    first = admin_client.get(URL, {"q": "heron"})
    assert rows(first) == [(new.pk, 1)]
    following = unescape(re.search(r'<a href="([^"]+)" id="fs-next"', first.content.decode()).group(1))
    second = admin_client.get(URL + following)
    assert rows(second) == [(old.pk, 2)] and 'id="fs-next"' not in second.content.decode()
    # The cursor of one search on another is refused with a notice, never an error page.
    other = admin_client.get(URL + following.replace("q=heron", "q=flies"))
    assert other.status_code == 200 and "belongs to another search" in other.content.decode()


@pytest.mark.parametrize(
    ("params", "notice"),
    [
        ({"q": "..."}, "Give at least one word"),
        ({"q": "heron", "project": "x1"}, "is not an id"),
        ({"q": "heron", "workspace": "9" * 30}, "is not an id"),
        ({"q": "heron", "since": "yesterday"}, "Give the since time"),
        ({"q": "heron", "until": "2026-02-30T10:00"}, "Give the until time"),
        ({"q": "heron", "cursor": "garbage"}, "belongs to another search"),
        ({"q": "heron", "type": [f"t{n}" for n in range(21)]}, "at most 20 item types"),
    ],
)
def test_bad_input_is_a_notice_not_an_error(admin_client, agents, params, notice):
    response = admin_client.get(URL, params)
    assert response.status_code == 200
    text = response.content.decode()
    assert 'id="fs-notice"' in text and notice in text and 'id="fs-results"' not in text


def test_the_empty_form_searches_nothing(admin_client, agents):
    text = admin_client.get(URL).content.decode()
    assert 'id="fs-form"' in text and 'id="fs-results"' not in text and 'id="fs-none"' not in text


def test_only_staff_who_may_view_agents(client, staff_client, agents):
    assert client.get(URL, {"q": "heron"}).status_code == 302  # to the login page
    assert staff_client().get(URL, {"q": "heron"}).status_code == 403


def test_staff_who_may_view_agents_see_it_linked_from_the_dashboard(staff_client, agents):
    operator = staff_client("snapshots.view_agentsnapshot")
    page = operator.get("/admin/").content.decode()
    assert f'href="{URL}" class="dash-card" id="dash-history"' in page
    assert 'id="dash-fleet-search">Search every timeline<' in page
    assert rows(operator.get(URL, {"q": "heron"})) == [(agents[1].pk, 1), (agents[0].pk, 2)]


def test_a_result_names_its_agent_once_and_shows_the_matching_text(admin_client):
    workspace = WorkspaceFactory(display_name="payments", project__display_name="shop")
    agent = AgentFactory(
        workspace=workspace, agent_id="733b692a-1111-4000-8000-000000000000", title="Fix refund rounding"
    )
    filler = "word " * 40
    say(agent, "first row", f"{filler}the refund rounding is off by one cent {filler}", at=START)
    response = admin_client.get(URL, {"q": "rounding"})
    row = response.content.decode().split('class="fs-result"')[1].split("</tr>")[0]
    # one name per agent: title · short id (the whole id on hover), as every admin page writes it
    assert '<span class="agent-title" title="Fix refund rounding">Fix refund rounding</span>' in row
    assert '<code class="agent-short-id" title="733b692a-1111-4000-8000-000000000000">733b692a</code>' in row
    shown = re.sub(r'href="[^"]*"', "", row)
    assert shown.count("733b692a-1111") == 2, "the whole id only in the hover and the row's data attribute"
    # the workspace as "workspace (project)", the newest match's text around the word, marked
    assert "<td>payments (shop)</td>" in row
    found = re.search(r'<div class="fs-snippet">(.*?)</div>', row)[1]
    assert 'the refund <mark class="tl-mark">rounding</mark> is off by one cent' in found
    assert found.startswith("…") and found.endswith("…") and len(unescape(re.sub("<[^>]+>", "", found))) < 200
    # the timeline page is titled by the same name
    timeline = admin_client.get(reverse("admin:snapshots_agentsnapshot_timeline", args=[agent.pk]))
    assert "<title>Timeline of Fix refund rounding · 733b692a |" in timeline.content.decode()
