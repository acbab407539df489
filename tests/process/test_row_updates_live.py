"""Row updates on the live stream across reconnects and ``kill -9``: a real server (gunicorn + uvicorn).

A writer appends tool calls and updates committed rows over HTTP while a reader follows the
stream with ``updates=1``, dropping its connection after a random number of events and
reconnecting with ``Last-Event-ID`` (``seq:update_seq``); midway the server is SIGKILLed and
restarted. Afterwards:

- every committed seq arrived exactly once, in order;
- no update arrived twice (the ``update_seq`` of the event ids only grows);
- every update the writer was answered for reached the reader: as its ``updated`` event,
  or inside the row's ``committed`` event when that row was sent after the update;
- what the reader holds, applying the events in order, is what the database holds.

Runs on this run's database (SQLite, or PostgreSQL when DATABASE_URL says so).
"""

from __future__ import annotations

import random
import threading
import time

import httpx
import pytest

from tests.process.live_support import EventReader, ServerProcess, append

pytestmark = [pytest.mark.process, pytest.mark.timeout(240)]

AGENT = "agent-u"
OPERATIONS = 160


@pytest.fixture
def server(tmp_path, scratch_db):
    database = scratch_db(migrated=True)
    server = ServerProcess(tmp_path, database=database)
    yield server
    server.stop()


def tool(output: str | None) -> dict:
    item = {"type": "tool_call", "callId": f"c-{output}", "name": "shell", "status": "running"}
    return item if output is None else {**item, "status": "completed", "output": output}


class Writer:
    """Appends and updates until told to stop; remembers each update it was answered for."""

    def __init__(self, server: ServerProcess, token: str):
        self.server, self.token = server, token
        self.head = 0
        #: (seq, revision) of every update answered with changed=True.
        self.acked: list[tuple[int, int]] = []
        self.failures: list[str] = []
        self.operations = 0

    def put(self, http: httpx.Client, seq: int, output: str) -> httpx.Response:
        return http.put(
            self.server.url(f"/api/v1/agents/{AGENT}/timeline/rows/{seq}"),
            json={"item": tool(output)},
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=15,
        )

    def step(self, http: httpx.Client, rng: random.Random) -> None:
        if self.head == 0 or rng.random() < 0.3:
            response = append(http, self.server, self.token, AGENT, [{"item": tool(None)}])
            if response.is_success:
                self.head = response.json()["head_seq"]
            elif response.status_code >= 500:
                return
            else:
                self.failures.append(response.text)
            return
        seq = rng.randint(1, self.head)
        response = self.put(http, seq, f"out-{self.operations}")
        if response.status_code == 200:
            body = response.json()
            assert body["changed"], body
            self.acked.append((seq, body["row"]["revision"]))
        elif response.status_code < 500:
            self.failures.append(response.text)

    def run(self, stop: threading.Event) -> None:
        rng = random.Random(7)
        with httpx.Client() as http:
            while not stop.is_set() and self.operations < OPERATIONS:
                try:
                    self.step(http, rng)
                except (httpx.HTTPError, httpx.InvalidURL):
                    time.sleep(0.2)  # the server is down: the call may or may not have landed
                self.operations += 1
                time.sleep(rng.uniform(0.005, 0.03))


class Follower:
    """The reader: what it holds of each row, and what it was sent."""

    def __init__(self):
        self.rows: dict[int, dict] = {}
        self.committed: list[int] = []
        self.update_ids: list[int] = []
        #: (seq, revision) of every updated event, and the revision of each committed one.
        self.updates: list[tuple[int, int]] = []
        self.committed_revision: dict[int, int] = {}
        self.last_event_id: str | None = None
        self.connections = 0

    def take(self, event) -> None:
        if event.event == "committed":
            self.committed.append(event.data["seq"])
            self.committed_revision[event.data["seq"]] = event.data["revision"]
            self.rows[event.data["seq"]] = event.data
        elif event.event == "updated":
            assert event.data["seq"] in self.rows, "an update of a row the reader was never sent"
            self.update_ids.append(int(event.id.split(":")[1]))
            self.updates.append((event.data["seq"], event.data["revision"]))
            self.rows[event.data["seq"]] = event.data
        if event.id is not None:
            self.last_event_id = event.id

    def follow_once(self, client: httpx.Client, server: ServerProcess, token: str, budget: int, done) -> None:
        """One connection, dropped after ``budget`` events, or at a keep-alive once ``done()``."""
        query = "?updates=1" + ("&after_seq=0" if self.last_event_id is None else "")
        try:
            url = server.url(f"/api/v1/agents/{AGENT}/timeline/stream{query}")
            reader = EventReader(client, url, token=token, last_event_id=self.last_event_id)
        except (httpx.HTTPError, httpx.InvalidURL):
            time.sleep(0.2)
            return
        self.connections += 1
        reader.stop_when = done
        try:
            if reader.response.status_code != 200:
                time.sleep(0.2)
                return
            for _ in range(budget):
                self.take(reader.next())
        except (httpx.HTTPError, EOFError):
            pass
        finally:
            try:
                reader.close()
            except httpx.HTTPError:
                pass


def stored_rows(server: ServerProcess, token: str) -> list[dict]:
    page = httpx.get(
        server.url(f"/api/v1/agents/{AGENT}/timeline"),
        params={"direction": "after", "seq": 0, "limit": 0},
        headers={"Authorization": f"Bearer {token}"},
        timeout=15,
    ).json()
    return page["rows"]


def test_updates_reach_a_reconnecting_reader_exactly_once_across_sigkill(server):
    token = server.setup([AGENT])["token"]
    server.start()
    writer, follower = Writer(server, token), Follower()
    stop = threading.Event()
    thread = threading.Thread(target=writer.run, args=(stop,), daemon=True)
    rng = random.Random(3)
    killed = False
    thread.start()
    deadline = time.monotonic() + 120
    target: str | None = None

    def done() -> bool:
        return follower.last_event_id == target if target else not thread.is_alive()

    with httpx.Client() as client:
        while thread.is_alive() and time.monotonic() < deadline:
            if not killed and writer.operations >= OPERATIONS // 2:
                server.kill()
                server.restart()
                killed = True
            follower.follow_once(client, server, token, rng.randint(1, 12), done)
        stop.set()
        thread.join(timeout=30)
        # One last update, answered: the reader is done once its cursor has reached it.
        with httpx.Client() as http:
            final = writer.put(http, 1, "the last word").json()
        writer.acked.append((1, final["row"]["revision"]))
        head = stored_rows(server, token)[-1]["seq"]
        target = f"{head}:{final['update_seq']}"
        while follower.last_event_id != target and time.monotonic() < deadline + 30:
            follower.follow_once(client, server, token, rng.randint(1, 12), done)
    assert killed and not writer.failures
    assert follower.last_event_id == target
    assert follower.connections >= 8
    assert follower.committed == list(range(1, head + 1))
    assert follower.update_ids == sorted(set(follower.update_ids)), "an update arrived twice"
    assert len(writer.acked) >= 40 and len(follower.updates) >= 20
    received = set(follower.updates)
    for seq, revision in writer.acked:
        assert (seq, revision) in received or follower.committed_revision[seq] >= revision, (seq, revision)
    stored = stored_rows(server, token)
    assert {row["seq"]: (row["item"], row["revision"]) for row in stored} == {
        seq: (row["item"], row["revision"]) for seq, row in follower.rows.items()
    }
