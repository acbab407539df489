"""The agent's timeline page in the admin, without JavaScript: filter, search, jumps, zones, the live
tail's fragment reads, who may see it, and its session-authenticated stream's refusals."""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import re

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient
from django.urls import reverse

from tests.factories import AgentFactory
from tests.timeline.live.test_views import fresh_hub  # noqa: F401 - a fixture
from timeline.models import TimelineRow
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

TYPES = ["user_message", "assistant_message", "tool_call"]
BASE_TIME = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def item(n: int) -> dict:
    kind = TYPES[n % 3]
    if kind == "tool_call":
        return {"type": kind, "callId": f"c{n}", "name": "bash", "status": "completed", "input": {"cmd": f"make t{n}"}}
    return {"type": kind, "text": f"message number{n} about {'zebra' if n % 10 == 0 else 'llama'}"}


@pytest.fixture
def agent():
    """120 rows, seq n committed at BASE_TIME + n minutes; 'zebra' in 10, 30, 40, 60, 70, 90, 100, 120."""
    agent = AgentFactory()
    append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=item(n)) for n in range(1, 121)])
    for seq in range(1, 121):
        TimelineRow.objects.filter(agent=agent, seq=seq).update(committed_at=BASE_TIME + dt.timedelta(minutes=seq))
    agent.refresh_from_db()
    return agent


def page_url(agent_id: str) -> str:
    return reverse("admin:snapshots_agentsnapshot_timeline", args=[agent_id])


def shown_seqs(response) -> list[int]:
    return [int(seq) for seq in re.findall(r'data-seq="(\d+)"', response.content.decode())]


def hit_seqs(response) -> list[int]:
    return [int(seq) for seq in re.findall(r'class="tl-row [^"]* tl-hit" id="seq-(\d+)"', response.content.decode())]


class TestAccess:
    def test_linked_at_the_top_of_the_agent_page_and_from_its_bottom(self, admin_client, agent):
        text = admin_client.get(reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk])).content.decode()
        link = f'href="{page_url(agent.pk)}" id="agent-page-timeline"'
        assert link in text
        assert text.index(link) < text.index('id="agentsnapshot_form"'), "the link is above the form"
        assert 'class="tl-open"' in text and "120 committed rows" in text
        assert "data-seq=" not in text, "the rows themselves are on the timeline page only"

    def test_staff_only(self, client, staff_client, agent):
        response = client.get(page_url(agent.pk))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        assert staff_client().get(page_url(agent.pk)).status_code == 403

    def test_a_staff_member_who_may_view_agents_sees_it(self, staff_client, agent):
        response = staff_client("snapshots.view_agentsnapshot").get(page_url(agent.pk))
        assert response.status_code == 200 and shown_seqs(response) == list(range(71, 121))

    def test_unknown_agent_is_404(self, admin_client):
        assert admin_client.get(page_url("no-such-agent")).status_code == 404


class TestFilter:
    def test_chips_filter_by_item_type_and_paging_keeps_the_filter(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"type": "tool_call"})
        assert shown_seqs(response) == [n for n in range(1, 121) if n % 3 == 2][-50:]
        text = response.content.decode()
        assert 'name="type" value="tool_call" checked' in text
        assert 'name="type" value="user_message">' in text
        assert "tl-older" not in text, "all 40 tool calls fit one page"

    def test_several_types(self, admin_client, agent):
        wanted = [n for n in range(1, 121) if n % 3 != 1]
        response = admin_client.get(page_url(agent.pk) + "?type=tool_call&type=user_message")
        assert shown_seqs(response) == wanted[-50:]
        older = re.search(r'href="(\?[^"]*)" class="tl-older"', response.content.decode()).group(1)
        older = older.replace("&amp;", "&")
        assert "type=tool_call" in older and "type=user_message" in older
        assert shown_seqs(admin_client.get(page_url(agent.pk) + older)) == wanted[:-50]


class TestSearch:
    def test_a_match_lands_on_its_row_in_context(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"q": "zebra"})
        assert response.status_code == 302
        assert response["Location"].endswith("around=120&q=zebra#seq-120")
        page = admin_client.get(response["Location"])
        assert hit_seqs(page) == [120] and 120 in shown_seqs(page)

    def test_previous_and_next_match(self, admin_client, agent):
        page = admin_client.get(page_url(agent.pk) + "?q=zebra&around=70")
        assert hit_seqs(page) == [70] and shown_seqs(page) == list(range(46, 96))
        text = page.content.decode().replace("&amp;", "&")
        previous = re.search(r'href="(\?[^"]*)" class="tl-prev-match"', text).group(1)
        following = re.search(r'href="(\?[^"]*)" class="tl-next-match"', text).group(1)
        assert admin_client.get(page_url(agent.pk) + previous)["Location"].endswith("#seq-60")
        assert admin_client.get(page_url(agent.pk) + following)["Location"].endswith("#seq-90")

    def test_search_within_the_chosen_types(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"q": "zebra", "type": "assistant_message"})
        assert response["Location"].endswith("#seq-100")

    def test_no_match_says_so_and_shows_the_newest(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"q": "okapi"})
        assert response.status_code == 200 and "No row matches “okapi”." in response.content.decode()
        assert shown_seqs(response) == list(range(71, 121))


class TestJump:
    def test_to_a_seq(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"seq": "15"})
        assert response.status_code == 302 and response["Location"].endswith("around=15#seq-15")
        page = admin_client.get(response["Location"])
        assert hit_seqs(page) == [15] and shown_seqs(page)[0] == 1

    @pytest.mark.parametrize("bad", ["0", "121", "abc", "-4", "1e3"])
    def test_to_a_seq_that_does_not_exist(self, admin_client, agent, bad):
        response = admin_client.get(page_url(agent.pk), {"seq": bad})
        assert response.status_code == 200 and "this timeline has seq 1 to 120" in response.content.decode()

    def test_to_the_first_row_at_or_after_a_time_in_the_operators_zone(self, admin_client, agent):
        # 13:07 in Paris (UTC+1 in January) is 12:07 UTC: seq 7.
        response = admin_client.get(page_url(agent.pk), {"at": "2026-01-01T13:07", "tz": "Europe/Paris"})
        assert response["Location"].endswith("#seq-7") and "tz=Europe%2FParis" in response["Location"]
        response = admin_client.get(page_url(agent.pk), {"at": "2026-01-01T12:07:01"})
        assert response["Location"].endswith("#seq-8")

    @pytest.mark.parametrize("at, notice", [("2027-01-01 00:00", "No row was committed"), ("soon", "YYYY-MM-DD")])
    def test_to_a_time_without_rows_or_not_a_time(self, admin_client, agent, at, notice):
        response = admin_client.get(page_url(agent.pk), {"at": at})
        assert response.status_code == 200 and notice in response.content.decode()


class TestRows:
    def test_times_have_seconds_and_a_named_zone(self, admin_client, agent):
        text = admin_client.get(page_url(agent.pk) + "?around=7&tz=Europe/Paris").content.decode()
        assert ">2026-01-01 13:07:00 CET</time>" in text and "Europe/Paris" in text
        text = admin_client.get(page_url(agent.pk) + "?around=7").content.decode()
        assert ">2026-01-01 12:07:00 UTC</time>" in text

    def test_the_browsers_zone_from_its_cookie_and_a_bad_zone_falls_back(self, admin_client, agent):
        admin_client.cookies["chartr_tz"] = "Asia%2FTokyo"  # as the script writes it
        assert ">2026-01-01 21:07:00 JST</time>" in admin_client.get(page_url(agent.pk) + "?around=7").content.decode()
        text = admin_client.get(page_url(agent.pk) + "?around=7&tz=Not/AZone").content.decode()
        assert ">2026-01-01 21:07:00 JST</time>" in text

    def test_tool_calls_collapse_and_long_texts_fold(self, admin_client):
        agent = AgentFactory()
        long_text = "\n".join(f"line {n}" for n in range(1, 31))
        append_timeline_items(
            agent_id=agent.pk,
            items=[
                NewTimelineItem(item=item(2)),
                NewTimelineItem(item={"type": "assistant_message", "text": long_text}),
            ],
        )
        text = admin_client.get(page_url(agent.pk)).content.decode()
        assert re.search(r'<details class="tl-tool">\s*<summary><strong>Tool call</strong> <code>bash</code>', text)
        assert "line 20</pre>" in text and '<details class="tl-fold"><summary>10 more lines</summary>' in text

    def test_the_live_tails_fragment_read(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"fragment": "rows", "after_seq": "117", "type": "tool_call"})
        text = response.content.decode()
        assert shown_seqs(response) == [119] and 'data-through="120"' in text and "<html" not in text

    def test_no_inline_script_or_style(self, admin_client, agent):
        text = admin_client.get(page_url(agent.pk)).content.decode()
        for script in re.findall(r"<script[^>]*>", text):
            assert "src=" in script
        assert "<style" not in text and "style=" not in text
        assert "timeline/agent_timeline.js" in text and "timeline/agent_timeline.css" in text


def stream_url(agent_id: str) -> str:
    return reverse("admin:snapshots_agentsnapshot_timeline_stream", args=[agent_id])


@pytest.fixture
def close_async_connections():
    """The async client's session and login queries run on asgiref's shared thread;
    close that thread's connection after the test, or PostgreSQL cannot drop the test database."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_async_connections")
def test_the_stream_wants_a_staff_session_and_a_known_agent(fresh_hub, django_user_model):  # noqa: F811
    agent = AgentFactory()
    client = AsyncClient()
    assert asyncio.run(client.get(stream_url(agent.pk))).status_code == 403
    # force_login: the lockout backend (django-axes) needs the request, which alogin() does not pass.
    asyncio.run(client.aforce_login(django_user_model.objects.create_user(username="plain", is_staff=False)))
    assert asyncio.run(client.get(stream_url(agent.pk))).status_code == 403
    asyncio.run(client.aforce_login(django_user_model.objects.create_superuser(username="boss", password="pw")))
    assert asyncio.run(client.get(stream_url("no-such-agent"))).status_code == 404
    assert asyncio.run(client.get(stream_url(agent.pk) + "?after_seq=x")).status_code == 400
    assert asyncio.run(client.post(stream_url(agent.pk))).status_code == 405


def row_html(text: str, seq: int) -> str:
    """The entry ``id="seq-N"`` of a page, up to the next entry."""
    start = text.index(f'id="seq-{seq}" data-seq="{seq}"')
    following = text.find('<div class="tl-row', start)
    return text[start : following if following > 0 else len(text)]


def call(status: str, **more) -> dict:
    return {"type": "tool_call", "callId": "c1", "name": "bash", "status": status, **more}


SHELL = {"type": "shell", "command": "make test", "cwd": "/srv/w"}
OUTPUT = (
    "collected 3 items\n"
    + "\n".join(f"test_{n} PASSED" for n in range(1, 12))
    + "\nthe okapi report\n"
    + "\n".join(f"summary line {n}" for n in range(1, 8))
    + "\n= 1 failed, 11 passed =\n"
)


class TestToolCalls:
    def test_a_call_and_its_later_states_are_one_entry(self, admin_client):
        agent = AgentFactory()
        append_timeline_items(
            agent_id=agent.pk,
            items=[
                NewTimelineItem(item=call("running", detail=SHELL)),
                NewTimelineItem(item={"type": "assistant_message", "text": "waiting"}),
                NewTimelineItem(item=call("completed", detail={**SHELL, "output": OUTPUT, "exitCode": 0})),
            ],
        )
        response = admin_client.get(page_url(agent.pk))
        text = response.content.decode()
        assert entry_seqs(text) == [1, 2]
        entry = row_html(text, 1)
        assert 'data-last-seq="3"' in entry and '"c1"' in html.unescape(entry)
        assert 'tl-status-completed">completed<' in entry, "the call as it is now"
        states = re.findall(r'<li(?: id="seq-(\d+)")? data-seq="(\d+)">.*?tl-status-(\w+)"', entry, re.S)
        assert states == [("", "1", "running"), ("3", "3", "completed")], "seq 3 is an anchor inside the entry"
        assert text.count('id="seq-3"') == 1 and '<div class="tl-row tl-tool_call" id="seq-3"' not in text
        # the output with its line breaks, folded after a few lines; the command as text, the exit code a token
        assert '<div class="tl-label">output</div>\n<pre class="tl-text">collected 3 items\ntest_1 PASSED' in entry
        assert "5 more lines in the middle" in entry and "the okapi report</pre>" in entry
        # the end (a test run's failure summary) shows below the fold, unfolded
        assert '<pre class="tl-text tl-tail">summary line 1\n' in entry and "= 1 failed, 11 passed =</pre>" in entry
        assert '<div class="tl-label">command</div>\n<pre class="tl-text">make test</pre>' in entry
        assert '<span class="tl-label">exitCode</span> <code class="tl-json"><span class="tl-j-num">0</span>' in entry
        assert '<details class="tl-tool">' in entry and "<mark" not in entry, "closed, nothing marked"

    def test_the_same_call_id_in_another_turn_is_another_call(self, admin_client):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=call("completed"))] * 2)
        for seq, turn in ((1, "t1"), (2, "t2")):
            TimelineRow.objects.filter(agent=agent, seq=seq).update(turn_id=turn)
        response = admin_client.get(page_url(agent.pk))
        text = response.content.decode()
        assert entry_seqs(text) == [1, 2] and "tl-states" not in text

    def test_a_call_that_started_before_the_page_shows_its_earlier_states(self, admin_client):
        agent = AgentFactory()
        items = [call("running", detail=SHELL)]
        items += [{"type": "user_message", "text": f"filler {n}"} for n in range(60)]
        items += [call("completed", detail={**SHELL, "output": "done"})]
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=item) for item in items])
        response = admin_client.get(page_url(agent.pk))
        assert entry_seqs(response.content.decode())[0] == 13, "the newest page: seq 13 to 62"
        entry = row_html(response.content.decode(), 62)
        assert 'href="?&amp;around=1#seq-1" title="on an earlier page">#1</a>' in entry
        assert re.findall(r'data-seq="(\d+)">', entry)[-2:] == ["1", "62"]
        assert "done" in entry and "make test" in entry

    def test_earlier_states_are_looked_for_within_the_lookback_only(self):
        from timeline.selectors import earlier_tool_call_rows

        agent = AgentFactory()
        items = [call("running"), *[{"type": "user_message", "text": "x"}] * 4, call("completed")]
        items.insert(1, {**call("running"), "callId": "other"})
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=item) for item in items])
        last = [TimelineRow.objects.get(agent=agent, seq=7)]
        assert earlier_tool_call_rows(agent_id=agent.pk, rows=last, lookback=5) == []
        assert [row.seq for row in earlier_tool_call_rows(agent_id=agent.pk, rows=last, lookback=6)] == [1]

    def test_the_live_tails_fragment_carries_the_whole_call(self, admin_client):
        agent = AgentFactory()
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=call("running", detail=SHELL))])
        append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=call("failed", error="exit 2"))])
        response = admin_client.get(page_url(agent.pk), {"fragment": "rows", "after_seq": "1"})
        text = response.content.decode()
        assert re.search(r'id="seq-2" data-seq="2" data-last-seq="2" data-item-type="tool_call" data-call="', text)
        assert 'title="on an earlier page">#1</a>' in text and 'tl-status-failed">failed<' in text
        assert '<div class="tl-label">error</div>\n<pre class="tl-text">exit 2</pre>' in text

    def test_a_search_hit_inside_a_call_opens_it_and_marks_the_words(self, admin_client):
        agent = AgentFactory()
        append_timeline_items(
            agent_id=agent.pk,
            items=[
                NewTimelineItem(item=call("running", detail=SHELL)),
                NewTimelineItem(item=call("completed", detail={**SHELL, "output": OUTPUT})),
                NewTimelineItem(item={"type": "user_message", "text": "nothing here"}),
            ],
        )
        found = admin_client.get(page_url(agent.pk), {"q": "okapi"})
        assert found["Location"].endswith("around=2&q=okapi#seq-2")
        text = admin_client.get(found["Location"]).content.decode()
        entry = row_html(text, 1)
        assert hit_seqs_of(text) == [1], "the entry that holds seq 2"
        assert '<details class="tl-tool" open>' in entry
        assert '<details class="tl-fold" open><summary>5 more lines in the middle</summary>' in entry, (
            "the folded match shows"
        )
        assert 'the <mark class="tl-mark">okapi</mark> report' in entry
        assert "<mark" not in row_html(text, 3)

    def test_markup_in_a_tool_output_is_escaped(self, admin_client):
        agent = AgentFactory()
        evil = "<script>alert('owned')</script><img src=x onerror=alert(1)>"
        append_timeline_items(
            agent_id=agent.pk,
            items=[
                NewTimelineItem(item={**call("completed", output=evil), "name": "<b>bash</b>", "metadata": {"k": evil}})
            ],
        )
        for url in (page_url(agent.pk), page_url(agent.pk) + "?q=owned&around=1"):
            text = admin_client.get(url).content.decode()
            assert "<script>alert" not in text and "<img src=x" not in text and "<b>bash</b>" not in text
            assert "&lt;script&gt;alert(&#x27;" in text and "&lt;b&gt;bash&lt;/b&gt;" in text


def entry_seqs(text: str) -> list[int]:
    return [int(seq) for seq in re.findall(r'<div class="tl-row [^"]*" id="seq-(\d+)"', text)]


def hit_seqs_of(text: str) -> list[int]:
    return [int(seq) for seq in re.findall(r'class="tl-row [^"]* tl-hit" id="seq-(\d+)"', text)]


MARKED_IN_EVERY_TYPE = [
    {"type": "user_message", "text": "an okapi"},
    {"type": "assistant_message", "text": "an okapi"},
    {"type": "reasoning", "text": "an okapi"},
    {"type": "tool_call", "callId": "k", "name": "bash", "status": "completed", "input": {"cmd": "an okapi"}},
    {"type": "todo", "items": [{"content": "an okapi", "status": "pending"}]},
    {"type": "interaction", "request": {"question": "an okapi?"}},
    {"type": "error", "message": "an okapi"},
    {"type": "compaction", "status": "completed", "note": "an okapi"},
    {"type": "future_thing", "payload": ["an okapi"]},
]


@pytest.mark.parametrize("found", MARKED_IN_EVERY_TYPE, ids=lambda item: item["type"])
def test_a_search_hit_marks_its_words_in_every_item_type(admin_client, found):
    agent = AgentFactory()
    append_timeline_items(
        agent_id=agent.pk,
        items=[NewTimelineItem(item={"type": "user_message", "text": "before"}), NewTimelineItem(item=found)],
    )
    response = admin_client.get(page_url(agent.pk), {"q": "OKAPI"})
    assert response["Location"].endswith("#seq-2")
    text = admin_client.get(response["Location"]).content.decode()
    assert '<mark class="tl-mark">okapi</mark>' in row_html(text, 2)
    if found["type"] == "tool_call":
        assert '<details class="tl-tool" open>' in row_html(text, 2)


class TestTheLiveTailMissesNoRow:
    """A row committed while a page is read is on the page or after its ``data-through``, where
    the live tail goes on from: never below ``data-through`` and missing."""

    @pytest.fixture
    def commits_right_after_the_rows_are_read(self, monkeypatch, agent):
        from timeline import selectors

        def committing(read):
            def read_then_commit(*args, **kwargs):
                found = read(*args, **kwargs)
                append_timeline_items(agent_id=agent.pk, items=[NewTimelineItem(item=item(121))])
                return found

            return read_then_commit

        monkeypatch.setattr(selectors, "_older", committing(selectors._older))
        monkeypatch.setattr(selectors, "_newer", committing(selectors._newer))

    @pytest.mark.usefixtures("commits_right_after_the_rows_are_read")
    def test_the_page(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk))
        through = int(re.search(r'id="timeline-page"[^>]* data-through="(\d+)"', response.content.decode()).group(1))
        assert shown_seqs(response)[-1] == 120 and through == 120, "seq 121 comes from the stream"

    @pytest.mark.usefixtures("commits_right_after_the_rows_are_read")
    def test_the_fragment(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"fragment": "rows", "after_seq": "118"})
        assert shown_seqs(response) == [119, 120] and 'data-through="120"' in response.content.decode()

    def test_a_fragment_with_more_rows_left_goes_on_from_its_last_row(self, admin_client, agent):
        response = admin_client.get(page_url(agent.pk), {"fragment": "rows", "after_seq": "10"})
        assert shown_seqs(response)[-1] == 60 and 'data-through="60"' in response.content.decode()


def test_the_page_says_what_the_agent_is_doing_now(admin_client, agent):
    from snapshots.services import update_agent

    text = admin_client.get(page_url(agent.pk) + "?tz=Europe/Paris").content.decode()
    assert f'id="tl-lifecycle" class="tl-lifecycle tl-lifecycle-{agent.lifecycle}">{agent.lifecycle}<' in text
    assert ">No attention needed<" in text and 'id="tl-archived" hidden' in text
    at = dt.datetime(2026, 1, 2, 9, 30, tzinfo=dt.UTC)
    update_agent(
        agent=agent, lifecycle="running", requires_attention=True, attention_reason="permission", attention_at=at
    )
    text = admin_client.get(page_url(agent.pk) + "?tz=Europe/Paris").content.decode()
    assert 'class="tl-lifecycle tl-lifecycle-running">running<' in text
    assert 'Needs attention: <strong>permission</strong> since <time datetime="2026-01-02T10:30:00+01:00">' in text
    assert re.search(r'id="tl-last-activity" datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CET</time>', text)
