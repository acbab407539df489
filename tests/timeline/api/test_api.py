from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from snapshots.services import archive_agent
from tests.factories import AgentFactory
from tests.timeline.histories import carry_over_history
from timeline.models import TimelineHead, TimelineRow
from tokens.services import create_api_token

pytestmark = pytest.mark.django_db


def client_with(read_only: bool = False) -> APIClient:
    _, raw = create_api_token(name="timeline-test", read_only=read_only)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def api():
    return client_with()


def url(agent_id: str) -> str:
    return f"/api/v1/agents/{agent_id}/timeline"


def items(*texts, ids=None):
    ids = ids or [None] * len(texts)
    return [{"item": {"type": "user_message", "text": t}, "item_id": i} for t, i in zip(texts, ids)]


def test_append_then_read(api):
    agent = AgentFactory()
    created = api.post(url(agent.pk), {"items": items("a", "b", ids=["k1", None])}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert [r["seq"] for r in body["rows"]] == [1, 2]
    assert body["rows"][0]["item_id"] == "k1" and body["head_seq"] == 2 and body["epoch"] == agent.timeline_head.epoch
    assert body["rows"][0]["committed_at"].endswith("+00:00")

    page = api.get(url(agent.pk), {"direction": "after", "seq": 0, "limit": 10}).json()
    assert [r["seq"] for r in page["rows"]] == [1, 2]
    assert page["rows"][0] == {
        "seq": 1,
        "committed_at": body["rows"][0]["committed_at"],
        "item_type": "user_message",
        "item": {"type": "user_message", "text": "a"},
        "item_id": "k1",
        "turn_id": None,
        "provider_message_id": None,
        "provider_timeline_item_id": None,
        "extra": {},
        "revision": 1,
    }
    assert page["holes"] == []
    assert page["window"] == {"min_seq": 1, "max_seq": 2, "next_seq": 3}
    assert (page["has_older"], page["has_newer"], page["reset"]) == (False, False, False)
    assert page["agent_id"] == agent.pk and page["direction"] == "after"


def test_retry_is_200_with_the_original_seqs(api):
    agent = AgentFactory()
    api.post(url(agent.pk), {"items": items("a", ids=["k1"])}, format="json")
    retry = api.post(url(agent.pk), {"items": items("a", ids=["k1"]), "expected_head_seq": 0}, format="json")
    assert retry.status_code == 200 and retry.json()["rows"][0]["seq"] == 1
    assert TimelineRow.objects.filter(agent=agent).count() == 1


def test_a_reused_item_id_with_other_content_is_409_item_conflict_with_the_original_seq(api):
    agent = AgentFactory()
    api.post(url(agent.pk), {"items": items("a", "b", ids=["k0", "k1"])}, format="json")
    response = api.post(url(agent.pk), {"items": items("new", "changed", ids=["k2", "k1"])}, format="json")
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert (error["code"], error["seq"], error["item_id"]) == ("item_conflict", 2, "k1")
    assert "items[1]" in error["message"]
    # Nothing of the call is stored, and the original row is untouched.
    assert list(TimelineRow.objects.filter(agent=agent).values_list("item_id", "item__text")) == [
        ("k0", "a"),
        ("k1", "b"),
    ]


def test_a_retry_whose_keys_come_in_another_order_is_still_a_retry(api):
    agent = AgentFactory()
    body = '{"items": [{"item": {"type": "user_message", "text": "a", "n": 1.0}, "item_id": "k1"}]}'
    reordered = '{"items": [{"item_id": "k1", "item": {"n": 1, "text": "a", "type": "user_message"}}]}'
    assert api.generic("POST", url(agent.pk), body, content_type="application/json").status_code == 201
    retry = api.generic("POST", url(agent.pk), reordered, content_type="application/json")
    assert retry.status_code == 200, retry.content
    assert retry.json()["rows"][0]["seq"] == 1


def test_seq_conflict_reports_the_head(api):
    agent = AgentFactory()
    api.post(url(agent.pk), {"items": items("a")}, format="json")
    response = api.post(url(agent.pk), {"items": items("b"), "expected_head_seq": 0}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "seq_conflict" and response.json()["error"]["head_seq"] == 1


def test_bad_item_in_batch_is_400_and_stores_nothing(api):
    agent = AgentFactory()
    batch = items("a") + [{"item": {"type": "tool_call", "name": "x"}}]
    response = api.post(url(agent.pk), {"items": batch}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "items[1].item" in error["fields"]
    assert not TimelineRow.objects.filter(agent=agent).exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"items": []},
        {"items": "nope"},
        {"items": [{"item": {"type": "x"}}] * 501},
        {"items": [{"item": {"type": "x"}}], "expected_head_seq": -1},
        {"items": [{"item": {"type": "x"}}], "expected_head_seq": 2**64},
        {"items": [{"item": {"type": "x"}, "item_id": 5}]},
        {"items": [{"item": {"type": "x", "t": "nul\u0000"}}]},
        [1, 2],
    ],
)
def test_malformed_appends_are_400(api, body):
    agent = AgentFactory()
    response = api.post(url(agent.pk), body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"


def test_oversized_item_is_413(api, settings):
    settings.CHARTR_MAX_ITEM_BYTES = 1000
    agent = AgentFactory()
    response = api.post(url(agent.pk), {"items": items("x" * 2000)}, format="json")
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"


def test_archived_is_409_unknown_is_404_and_history_stays_readable(api):
    agent = AgentFactory()
    api.post(url(agent.pk), {"items": items("a")}, format="json")
    archive_agent(agent=agent)
    response = api.post(url(agent.pk), {"items": items("b")}, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "archived"
    assert api.get(url(agent.pk)).json()["rows"][0]["item"]["text"] == "a"
    assert api.post(url("ghost"), {"items": items("a")}, format="json").status_code == 404
    assert api.get(url("ghost")).json()["error"]["code"] == "not_found"


def test_read_parameters_are_validated(api):
    agent = AgentFactory()
    for params in (
        {"direction": "sideways"},
        {"limit": 1001},
        {"seq": "abc", "direction": "after"},
        {"projection": "x"},
        {"seq": 2**70, "direction": "after"},
    ):
        response = api.get(url(agent.pk), params)
        assert response.status_code == 400, (params, response.content)
        assert response.json()["error"]["code"] == "invalid"


def test_after_without_seq_reads_from_the_start_and_before_from_the_head(api):
    agent = AgentFactory()
    api.post(url(agent.pk), {"items": items(*"abcde")}, format="json")
    after = api.get(url(agent.pk), {"direction": "after", "limit": 2}).json()
    assert [r["seq"] for r in after["rows"]] == [1, 2] and after["has_newer"] is True
    before = api.get(url(agent.pk), {"direction": "before", "limit": 2}).json()
    assert [r["seq"] for r in before["rows"]] == [4, 5] and before["has_older"] is True
    assert before["direction"] == "before"


def test_stale_epoch_returns_reset_and_tail(api):
    agent = AgentFactory()
    api.post(url(agent.pk), {"items": items(*"abcdef")}, format="json")
    old = agent.timeline_head.epoch
    TimelineHead.objects.filter(pk=agent.pk).update(epoch="new-epoch")
    page = api.get(url(agent.pk), {"direction": "after", "seq": 1, "limit": 2, "epoch": old}).json()
    # The direction asked for, as Paseo answers it; the rows are the tail.
    assert page["reset"] is True and page["epoch"] == "new-epoch" and page["direction"] == "after"
    assert [r["seq"] for r in page["rows"]] == [5, 6]


def test_projected_view(api):
    agent = AgentFactory()
    batch = [{"item": {"type": "assistant_message", "text": t}} for t in ("Hel", "lo")]
    api.post(url(agent.pk), {"items": batch}, format="json")
    page = api.get(url(agent.pk), {"projection": "projected"}).json()
    assert len(page["rows"]) == 1
    entry = page["rows"][0]
    assert (entry["seq_start"], entry["seq_end"], entry["item"]["text"]) == (1, 2, "Hello")


def test_auth_is_required_and_read_only_tokens_cannot_append():
    agent = AgentFactory()
    assert APIClient().get(url(agent.pk)).status_code == 401
    reader = client_with(read_only=True)
    assert reader.get(url(agent.pk)).status_code == 200
    response = reader.post(url(agent.pk), {"items": items("a")}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied"


def test_the_stream_is_documented_in_the_schema(api):
    from tests.support.api import stream_path

    document = api.get("/api/v1/schema").json()
    operation = document["paths"][stream_path()]["get"]
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    assert {p["name"] for p in operation["parameters"]} == {
        "agent_id",
        "after_seq",
        "epoch",
        "updates",
        "Last-Event-ID",
    }
    assert "bearerAuth" in document["components"]["securitySchemes"]
    for status in ("400", "401", "404", "500", "503"):
        ref = operation["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        assert ref == "#/components/schemas/Error"


def test_read_contract_flags_are_always_present_on_both_views(api):
    agent = AgentFactory()
    carry_over_history(agent.pk, start_seq=11, count=4, item_type="assistant_message")
    for projection in ("canonical", "projected"):
        plain = api.get(url(agent.pk), {"projection": projection}).json()
        assert (plain["stale_cursor"], plain["gap"], plain["reset"]) == (False, False, False)
        assert plain["window"] == {"min_seq": 11, "max_seq": 14, "next_seq": 15}
        gap = api.get(url(agent.pk), {"direction": "after", "seq": 2, "projection": projection}).json()
        assert (gap["stale_cursor"], gap["gap"], gap["reset"]) == (False, True, True)
        stale = api.get(url(agent.pk), {"epoch": "nope", "projection": projection}).json()
        assert (stale["stale_cursor"], stale["gap"], stale["reset"]) == (True, False, True)
    gap = api.get(url(agent.pk), {"direction": "after", "seq": 2}).json()
    assert [row["seq"] for row in gap["rows"]] == [11, 12, 13, 14]
    projected = api.get(url(agent.pk), {"direction": "after", "seq": 2, "projection": "projected"}).json()
    assert [(row["seq_start"], row["seq_end"]) for row in projected["rows"]] == [(11, 14)]
