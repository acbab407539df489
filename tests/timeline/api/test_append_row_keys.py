"""The append takes Paseo's row keys (``appendCommitted(agentId, item, {timestamp, turnId})`` and the rest)."""

from __future__ import annotations

import pytest

from tests.factories import AgentFactory
from tests.timeline.api.test_api import client_with, url
from timeline.models import TimelineRow
from timeline.selectors import rows_after

pytestmark = pytest.mark.django_db

ASSISTANT = {"type": "assistant_message", "text": "hi"}


@pytest.fixture
def api():
    return client_with()


def test_append_keeps_every_row_key_and_tells_a_null_token_from_none(api):
    agent = AgentFactory()
    entries = [
        {
            "item": ASSISTANT,
            "committed_at": "2026-03-04T05:06:07.890+00:00",
            "turn_id": "turn-7",
            "provider_message_id": "msg-1",
            "provider_timeline_item_id": "pti-1",
            "revert_token": {"checkpoint": "abc", "offsets": [1, 2]},
        },
        {"item": ASSISTANT, "revert_token": None},
        {"item": ASSISTANT},
    ]
    created = api.post(url(agent.pk), {"items": entries}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["rows"][0]["committed_at"] == "2026-03-04T05:06:07.890000+00:00"
    rows = api.get(url(agent.pk), {"direction": "after", "seq": 0}).json()["rows"]
    assert rows[0]["committed_at"] == "2026-03-04T05:06:07.890000+00:00"
    assert (rows[0]["turn_id"], rows[0]["provider_message_id"], rows[0]["provider_timeline_item_id"]) == (
        "turn-7",
        "msg-1",
        "pti-1",
    )
    assert rows[0]["revert_token"] == {"checkpoint": "abc", "offsets": [1, 2]}
    assert rows[1]["revert_token"] is None and rows[1]["turn_id"] is None
    assert "revert_token" not in rows[2]
    # The live stream's rows say the same.
    streamed = rows_after(agent_id=agent.pk, after_seq=0, limit=10)
    assert [row.has_revert_token for row in streamed] == [True, True, False]
    assert TimelineRow.objects.get(agent=agent, seq=3).revert_token is None


def test_append_without_a_time_is_stamped_now(api):
    agent = AgentFactory()
    body = api.post(url(agent.pk), {"items": [{"item": ASSISTANT, "turn_id": "t"}]}, format="json").json()
    row = TimelineRow.objects.get(agent=agent, seq=1)
    assert row.turn_id == "t" and body["rows"][0]["committed_at"] == row.committed_at.isoformat()


@pytest.mark.parametrize(
    "entry",
    [
        {"item": ASSISTANT, "committed_at": "2026-03-04T05:06:07"},  # no offset
        {"item": ASSISTANT, "committed_at": "yesterday"},
        {"item": ASSISTANT, "committed_at": 17},
        {"item": ASSISTANT, "turn_id": ""},
        {"item": ASSISTANT, "turn_id": "x" * 257},
        {"item": ASSISTANT, "provider_message_id": 5},
        {"item": ASSISTANT, "turnId": "t"},  # Paseo's spelling is not the API's
    ],
)
def test_bad_row_keys_are_refused_with_the_envelope(api, entry):
    agent = AgentFactory()
    refused = api.post(url(agent.pk), {"items": [entry]}, format="json")
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["code"] == "invalid"
    assert not TimelineRow.objects.filter(agent=agent).exists()
