"""Group commit survives ``kill -9``: a real server under concurrent appends, killed mid-load and restarted.

Twelve clients append (1 to 3 items per call, each with an ``item_id``): six
to agents of their own, six to one shared agent, so the server's appends are
batched both across agents and on one agent. Once enough calls are answered,
the whole server is SIGKILLed. After the restart:

- every row a client was answered for is stored, at the seq it was answered;
- every agent's seqs are contiguous from 1 to its ``head_seq``;
- each call cut off by the kill committed whole or not at all, and sending it
  again is answered with the seqs it had (a replay) or appends it now.

Runs on this run's database (SQLite, or PostgreSQL when DATABASE_URL says so).
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.process.live_support import ServerProcess, append

pytestmark = [pytest.mark.process, pytest.mark.timeout(240)]

SEPARATE = [f"own-{n}" for n in range(6)]
SHARED = "shared"
ACKED_BEFORE_KILL = 400


@pytest.fixture
def server(tmp_path, scratch_db):
    database = scratch_db(migrated=True)
    server = ServerProcess(tmp_path, database=database)
    yield server
    server.stop()


class Client:
    """Appends to one agent until the server dies; remembers what it was answered and what was cut off."""

    def __init__(self, server: ServerProcess, token: str, name: str, agent_id: str):
        self.server, self.token, self.name, self.agent_id = server, token, name, agent_id
        self.acked: dict[str, int] = {}
        self.cut_off: list[dict] | None = None
        self.failures: list[str] = []

    def run(self, stop: threading.Event) -> None:
        index = 0
        with httpx.Client() as http:
            while not stop.is_set():
                batch = [
                    {
                        "item": {"type": "user_message", "text": f"{self.name} {index + k}"},
                        "item_id": f"{self.name}-{index + k}",
                    }
                    for k in range(1 + index % 3)
                ]
                index += len(batch)
                try:
                    response = append(http, self.server, self.token, self.agent_id, batch)
                except httpx.HTTPError:
                    self.cut_off = batch  # never answered: committed whole or not at all
                    return
                if response.status_code != 201:
                    self.failures.append(f"{response.status_code} {response.text[:200]}")
                    return
                for row in response.json()["rows"]:
                    self.acked[row["item_id"]] = row["seq"]


def read_timeline(server: ServerProcess, token: str, agent_id: str) -> tuple[dict[str, int], int]:
    """Every stored row of the agent as item_id -> seq, and the agent's head_seq."""
    stored: dict[str, int] = {}
    after = 0
    with httpx.Client() as http:
        while True:
            page = http.get(
                server.url(f"/api/v1/agents/{agent_id}/timeline"),
                params={"direction": "after", "seq": after, "limit": 1000},
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            ).json()
            for row in page["rows"]:
                stored[row["item_id"]] = row["seq"]
            if not page["rows"] or not page["has_newer"]:
                return stored, page["window"]["max_seq"]
            after = page["rows"][-1]["seq"]


def test_every_acknowledged_append_survives_kill_9_with_its_seq_and_seqs_stay_contiguous(server):
    token = server.setup([*SEPARATE, SHARED])["token"]
    server.start()
    clients = [Client(server, token, f"c{n}", agent_id) for n, agent_id in enumerate(SEPARATE)]
    clients += [Client(server, token, f"s{n}", SHARED) for n in range(6)]
    stop = threading.Event()
    threads = [threading.Thread(target=client.run, args=(stop,), daemon=True) for client in clients]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while sum(len(client.acked) for client in clients) < ACKED_BEFORE_KILL and time.monotonic() < deadline:
        time.sleep(0.02)
    server.kill()
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(client.failures for client in clients), [client.failures for client in clients]
    assert sum(len(client.acked) for client in clients) >= ACKED_BEFORE_KILL

    server.start()
    stored: dict[str, dict[str, int]] = {}
    for agent_id in [*SEPARATE, SHARED]:
        stored[agent_id], head_seq = read_timeline(server, token, agent_id)
        assert sorted(stored[agent_id].values()) == list(range(1, head_seq + 1)), f"{agent_id}: seqs not contiguous"
    for client in clients:
        for item_id, seq in client.acked.items():
            assert stored[client.agent_id].get(item_id) == seq, f"acknowledged {item_id} at seq {seq} lost or moved"

    with httpx.Client() as http:
        for client in clients:
            if client.cut_off is None:
                continue
            ids = [entry["item_id"] for entry in client.cut_off]
            present = [item_id in stored[client.agent_id] for item_id in ids]
            assert all(present) or not any(present), f"{client.name}: a call cut off by the kill was split: {present}"
            response = append(http, server, token, client.agent_id, client.cut_off)
            assert response.status_code == (200 if all(present) else 201), response.text
            answered = {row["item_id"]: row["seq"] for row in response.json()["rows"]}
            if all(present):
                assert answered == {item_id: stored[client.agent_id][item_id] for item_id in ids}
    for agent_id in [*SEPARATE, SHARED]:
        rows, head_seq = read_timeline(server, token, agent_id)
        assert sorted(rows.values()) == list(range(1, head_seq + 1))
