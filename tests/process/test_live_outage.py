"""The live stream while its transport is down: a committed row reaches every open stream
through the database (docs/timeline.md, "When the transport is down"), never 201 and silence."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.process.live_support import EventReader, ServerProcess, append
from tests.support.processes import LISTENING, wait_for

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]

#: Nothing listens here: the configured Redis is down for the whole test.
DOWN_REDIS = "redis://127.0.0.1:1/0"


@pytest.fixture
def outage_server(tmp_path, scratch_db):
    server = ServerProcess(
        tmp_path,
        database=scratch_db(migrated=True),
        env={"CHARTR_LIVE_TRANSPORT": "redis", "CHARTR_REDIS_URL": DOWN_REDIS, "CHARTR_WORKERS": "2"},
    )
    setup = server.setup(["agent-o"])
    server.launch()
    # /readyz stays 503 (redis_unreachable): wait for the port and /healthz instead.
    server.port = int(wait_for(lambda: LISTENING.search(server.process.output), timeout=45, what="listening")[1])
    wait_for(lambda: server.get("/healthz").status_code == 200, timeout=30, what="/healthz")
    yield server, setup["token"]
    server.stop()


def stream(client, server, token, query=""):
    return EventReader(client, server.url(f"/api/v1/agents/agent-o/timeline/stream{query}"), token=token)


def committed_seqs(reader: EventReader, count: int, *, within: float) -> list[int]:
    seqs: list[int] = []
    deadline = time.monotonic() + within
    reader.stop_when = lambda: time.monotonic() > deadline
    while len(seqs) < count and time.monotonic() < deadline:
        try:
            event = reader.next()
        except EOFError:
            break
        if event.event == "committed":
            seqs.append(event.data["seq"])
    return seqs


def test_streams_opened_during_an_outage_get_every_row_appended_after_they_opened(outage_server):
    server, token = outage_server
    assert server.get("/readyz").status_code == 503
    with httpx.Client() as client, httpx.Client() as writer:
        # Opened without a cursor, and rows appended at once, before the stream's first event.
        readers = [stream(client, server, token) for _ in range(3)]
        for reader in readers:
            assert reader.response.status_code == 200
        for index in range(8):
            response = append(
                writer, server, token, "agent-o", [{"item": {"type": "user_message", "text": f"m{index}"}}]
            )
            assert response.status_code == 201, response.text
        try:
            for reader in readers:
                # The bound is the safety-net poll (1 s) plus a read; 5 s leaves room on a loaded machine.
                assert committed_seqs(reader, 8, within=5) == list(range(1, 9))
            # A row committed mid-run reaches the streams that are open.
            response = append(writer, server, token, "agent-o", [{"item": {"type": "user_message", "text": "late"}}])
            assert response.status_code == 201
            for reader in readers:
                assert committed_seqs(reader, 1, within=5) == [9]
        finally:
            for reader in readers:
                reader.close()
