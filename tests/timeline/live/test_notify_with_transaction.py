"""PostgreSQL: an append's NOTIFY is sent inside its own transaction, so other
processes hear of it when it commits, and never of an append rolled back."""

from __future__ import annotations

import datetime as dt
import uuid

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from psycopg import sql

from tests.factories import AgentFactory
from timeline.live.hub import Hub, set_hub
from timeline.live.messages import Committed, decode_message
from timeline.live.transports.postgres import PostgresTransport, postgres_connect_kwargs
from timeline.services import NewTimelineItem, PendingRow, append_timeline_items, bulk_append_timeline_rows

pytestmark = [
    pytest.mark.skipif("connection.vendor != 'postgresql'"),
    pytest.mark.django_db(transaction=True),
]


class Rollback(Exception):
    pass


@pytest.fixture
def listener_and_hub():
    """A LISTEN connection of its own (another process, as far as PostgreSQL can tell) and a hub
    whose PostgreSQL transport sends on that test's own channel."""
    channel = f"chartr_test_{uuid.uuid4().hex[:12]}"
    listener = psycopg.connect(**postgres_connect_kwargs(), autocommit=True)
    listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    hub = Hub(transport=PostgresTransport(channel_name=channel, origin="sender"))
    previous = set_hub(hub)
    try:
        yield listener
    finally:
        set_hub(previous)
        hub.db.shutdown()
        listener.close()


def heard(listener: psycopg.Connection, *, timeout: float) -> list:
    """The ``Committed`` messages heard for ``timeout`` seconds (creating an agent announces it too)."""
    messages = [decode_message(n.payload) for n in listener.notifies(timeout=timeout)]
    return [(origin, message) for origin, message in messages if isinstance(message, Committed)]


def append(agent_id: str, text: str) -> None:
    append_timeline_items(agent_id=agent_id, items=[NewTimelineItem(item={"type": "assistant_message", "text": text})])


def test_the_notification_is_sent_in_the_transaction_and_arrives_with_the_commit(listener_and_hub):
    agent = AgentFactory()
    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries:
            append(agent.agent_id, "one")
        assert [q["sql"] for q in queries.captured_queries if "pg_notify" in q["sql"]], "sent before the commit"
        assert heard(listener_and_hub, timeout=0.3) == []
    agent.refresh_from_db()
    assert heard(listener_and_hub, timeout=2) == [
        ("sender", Committed(agent_id=agent.agent_id, head_seq=1, epoch=agent.timeline_head.epoch))
    ]


def test_an_append_rolled_back_is_never_announced(listener_and_hub):
    agent = AgentFactory()
    with pytest.raises(Rollback), transaction.atomic():
        append(agent.agent_id, "gone")
        raise Rollback
    assert heard(listener_and_hub, timeout=0.5) == []
    append(agent.agent_id, "kept")
    agent.refresh_from_db()
    assert heard(listener_and_hub, timeout=2) == [
        ("sender", Committed(agent_id=agent.agent_id, head_seq=1, epoch=agent.timeline_head.epoch))
    ]
    assert heard(listener_and_hub, timeout=0.3) == [], "one append, one notification"


def test_the_notification_goes_in_the_statement_that_inserts_the_rows(listener_and_hub):
    agent = AgentFactory()
    with CaptureQueriesContext(connection) as queries:
        append(agent.agent_id, "one")
    notifying = [q["sql"] for q in queries.captured_queries if "pg_notify" in q["sql"]]
    assert len(notifying) == 1
    assert "INSERT INTO" in notifying[0], "a round trip of its own"
    agent.refresh_from_db()
    assert heard(listener_and_hub, timeout=2) == [
        ("sender", Committed(agent_id=agent.agent_id, head_seq=1, epoch=agent.timeline_head.epoch))
    ]


def test_an_append_in_several_batches_is_announced_once_with_its_last_head(listener_and_hub):
    agent = AgentFactory()
    now = dt.datetime.now(dt.UTC)
    rows = [
        PendingRow(
            item={"type": "reasoning", "text": f"row {n}"}, item_type="reasoning", item_id=None, committed_at=now
        )
        for n in range(5)
    ]
    bulk_append_timeline_rows(agent_id=agent.agent_id, rows=rows, batch_size=2)
    agent.refresh_from_db()
    assert heard(listener_and_hub, timeout=2) == [
        ("sender", Committed(agent_id=agent.agent_id, head_seq=5, epoch=agent.timeline_head.epoch))
    ]
