"""Two chartr instances behind Debian's nginx, sharing one PostgreSQL database (and Redis), under failure.

Each instance is the real entrypoint (migrate under the migration lock, then
gunicorn with gunicorn.conf.py) on a loopback port of its own, with its own
data dir and the shared config dir (one secret key). nginx serves
``deploy/nginx/chartr.conf``, the compose ``scale`` profile's file, on a
third port. Every client goes through nginx. For each fan-out transport
(Redis pub/sub, PostgreSQL LISTEN/NOTIFY), with the poll safety net slowed
to 30 s so news must cross by the transport:

1. both up: provisional items sent through the balancer reach subscribers
   on both instances;
2. writers append (item_ids, retried until acknowledged) to a shared agent
   and to agents of their own while subscribers stream, dropping and
   resuming with ``Last-Event-ID`` wherever the balancer sends them;
3. ``kill -9`` one instance mid-load, restart it;
4. SIGTERM the other: ``/readyz`` turns 503 at once, it drains and exits 0,
   and no client sees a 5xx through the balancer.

Then every acknowledged append is stored with the seq it was acknowledged
with, no item_id is stored twice, seqs are 1..head without a gap, and every
subscriber saw exactly 1..head in order. The figures are printed (``-s``).
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import skip_or_fail
from tests.process.live_support import REDIS_URL, EventReader, ServerProcess, redis_available
from tests.support.balancer import Nginx, free_port, nginx_binary, upstream_of, wait_until
from tests.support.processes import ENTRYPOINT, start_together

pytestmark = [pytest.mark.process, pytest.mark.own_databases, pytest.mark.timeout(150)]

AGENTS = ["shared", "solo-0", "solo-1"]
WRITERS = 3
DRAIN_SECONDS = 2
TRANSPORTS = {
    "redis": {"CHARTR_LIVE_TRANSPORT": "redis", "CHARTR_REDIS_URL": REDIS_URL},
    "postgres": {"CHARTR_LIVE_TRANSPORT": "postgres"},
}


class Clock:
    """What the test is doing now: every failure a client sees is filed under the current phase."""

    def __init__(self):
        self.phase = "both-up"
        self.errors: dict[str, Counter] = defaultdict(Counter)
        self.lock = threading.Lock()

    def record(self, what: str) -> None:
        with self.lock:
            self.errors[self.phase][what] += 1

    def count(self, phase: str, prefix: str = "") -> int:
        return sum(n for what, n in self.errors.get(phase, {}).items() if what.startswith(prefix))


@dataclass
class Writer:
    index: int
    acked: dict[str, tuple[str, int]] = field(default_factory=dict)  # item_id -> (agent, seq)
    attempts: int = 0
    replayed: int = 0
    upstreams: Counter = field(default_factory=Counter)

    def run(self, balancer: Nginx, token: str, clock: Clock, stop: threading.Event) -> None:
        rng = random.Random(self.index)
        headers = {"Authorization": f"Bearer {token}"}
        batch_no = 0
        with httpx.Client(headers=headers, timeout=20) as client:
            while not stop.is_set():
                agent = "shared" if batch_no % 2 == 0 else f"solo-{self.index % 2}"
                items = [
                    {
                        "item": {"type": "user_message", "text": f"w{self.index}"},
                        "item_id": f"w{self.index}-{batch_no}-{k}",
                    }
                    for k in range(rng.randint(1, 3))
                ]
                batch_no += 1
                # The same batch again until acknowledged: item_ids make the retry safe.
                while True:
                    self.attempts += 1
                    try:
                        response = client.post(balancer.url(f"/api/v1/agents/{agent}/timeline"), json={"items": items})
                    except httpx.HTTPError as exc:
                        clock.record(f"writer transport error {type(exc).__name__}")
                        time.sleep(0.1)
                        continue
                    if response.status_code in (200, 201):
                        # 200: every item_id was stored already (a retry of a batch that did commit).
                        self.replayed += response.status_code == 200
                        self.upstreams[upstream_of(response)] += 1
                        for row in response.json()["rows"]:
                            self.acked[row["item_id"]] = (agent, row["seq"])
                        break
                    clock.record(f"{response.status_code // 100}xx writer {response.status_code}")
                    time.sleep(0.1)
                time.sleep(rng.uniform(0.005, 0.03))


@dataclass
class Subscriber:
    name: str
    agent: str
    seqs: list[int] = field(default_factory=list)
    item_ids: list[str] = field(default_factory=list)
    upstreams: Counter = field(default_factory=Counter)
    resumed: int = 0
    cut: int = 0
    ended: int = 0
    moved: int = 0
    target: int | None = None

    def done(self) -> bool:
        return self.target is not None and len(self.seqs) >= self.target

    def run(self, balancer: Nginx, token: str, clock: Clock, deadline: float) -> None:
        rng = random.Random(self.name)
        url = balancer.url(f"/api/v1/agents/{self.agent}/timeline/stream")
        previous = None
        with httpx.Client() as client:
            while not self.done() and time.monotonic() < deadline:
                last = str(self.seqs[-1]) if self.seqs else None
                try:
                    reader = EventReader(
                        client, url + ("" if last else "?after_seq=0"), token=token, last_event_id=last
                    )
                except httpx.HTTPError as exc:
                    clock.record(f"subscriber connect error {type(exc).__name__}")
                    time.sleep(0.1)
                    continue
                try:
                    if reader.response.status_code != 200:
                        clock.record(f"{reader.response.status_code // 100}xx stream {reader.response.status_code}")
                        time.sleep(0.1)
                        continue
                    where = upstream_of(reader.response)
                    self.upstreams[where] += 1
                    self.resumed += last is not None
                    # Resumed with Last-Event-ID on the other instance than the previous connection.
                    self.moved += last is not None and where != previous
                    previous = where
                    reader.stop_when = self.done
                    self._read(reader, budget=rng.randint(3, 40))
                except EOFError:
                    self.ended += not self.done()  # ended cleanly by a draining instance: resume elsewhere
                except httpx.HTTPError:
                    self.cut += 1  # cut mid-stream (kill -9): resume with Last-Event-ID
                finally:
                    reader.close()

    def _read(self, reader: EventReader, *, budget: int) -> None:
        """Read until ``budget`` rows came (then drop the connection on purpose) or the target is reached."""
        while budget > 0 and not self.done():
            event = reader.next()
            if event.event != "committed":
                continue
            assert event.id == str(event.data["seq"])
            self.seqs.append(event.data["seq"])
            self.item_ids.append(event.data["item_id"])
            budget -= 1


def instance(root: Path, name: str, database, *, config_dir: Path, port: int, transport_env: dict) -> ServerProcess:
    env = {
        "XDG_CONFIG_HOME": str(config_dir),  # shared: one secret key
        "CHARTR_BIND": f"127.0.0.1:{port}",
        "CHARTR_WORKERS": "1",
        "CHARTR_LOG_LEVEL": "INFO",  # the harness reads the port from gunicorn's "Listening at"
        "CHARTR_COLLECTSTATIC": "0",
        "CHARTR_LIVE_POLL_SECONDS": "30",
        "CHARTR_DRAIN_SECONDS": str(DRAIN_SECONDS),
        "CHARTR_GRACEFUL_TIMEOUT": "15",
        **transport_env,
    }
    server = ServerProcess(root / name, database=database, env=env, name=name)
    server.command = [str(ENTRYPOINT)]
    server.start_timeout = 90
    return server


@pytest.fixture
def deployment(tmp_path, scratch_db):
    """``make(transport)`` -> (nginx, [instance a, instance b], token), stopped afterwards."""
    if nginx_binary() is None:
        skip_or_fail("nginx is not installed (apt-get install nginx-light)")
    started: list = []

    def make(transport: str):
        if transport == "redis" and not redis_available():
            skip_or_fail(f"Redis is not reachable at {REDIS_URL}")
        database = scratch_db("postgresql", migrated=True, purpose="multi")
        ports = [free_port(), free_port()]
        config_dir = tmp_path / "shared-config"
        servers = [
            instance(tmp_path, name, database, config_dir=config_dir, port=port, transport_env=TRANSPORTS[transport])
            for name, port in zip(("a", "b"), ports, strict=True)
        ]
        started.extend(servers)
        token = servers[0].setup(AGENTS)["token"]
        start_together(*servers)
        balancer = Nginx(tmp_path / "nginx", ports)
        (tmp_path / "nginx").mkdir()
        started.append(balancer.start())
        return balancer, servers, database, token

    yield make
    for thing in reversed(started):
        thing.stop()


def check_provisional_crosses_instances(balancer: Nginx, token: str) -> set[str]:
    """Subscribers on both instances each receive every provisional item, wherever it was sent."""
    headers = {"Authorization": f"Bearer {token}"}
    readers: dict[str, EventReader] = {}
    with httpx.Client() as client:
        try:
            for _ in range(12):
                reader = EventReader(client, balancer.url("/api/v1/agents/shared/timeline/stream"), token=token)
                where = upstream_of(reader.response)
                if where in readers:
                    reader.close()
                    continue
                assert reader.next().event == "agent"
                readers[where] = reader
                if len(readers) == 2:
                    break
            assert len(readers) == 2, f"streams landed only on {list(readers)}"
            senders = set()
            for n in range(4):
                item = {"type": "assistant_message", "text": f"thinking {n}"}
                response = client.post(
                    balancer.url("/api/v1/agents/shared/timeline/provisional"),
                    json={"item": item, "item_id": f"p{n}"},
                    headers=headers,
                )
                assert response.status_code == 202, response.text
                senders.add(upstream_of(response))
                for reader in readers.values():
                    assert reader.next_of("provisional", timeout=10).data == {"item": item, "item_id": f"p{n}"}
            return senders | set(readers)
        finally:
            for reader in readers.values():
                reader.close()


def stored_rows(database) -> dict[str, list[tuple[int, str]]]:
    rows = database.query(
        "SELECT agent_id, seq, item_id FROM timeline_timelinerow "
        "WHERE agent_id IN ('shared', 'solo-0', 'solo-1') ORDER BY agent_id, seq"
    )
    by_agent: dict[str, list[tuple[int, str]]] = {agent: [] for agent in AGENTS}
    for agent, seq, item_id in rows:
        by_agent[agent].append((seq, item_id))
    return by_agent


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_two_instances_behind_nginx_survive_kill_and_drain(deployment, transport):
    balancer, (first, second), database, token = deployment(transport)
    first_address = first.base_url.removeprefix("http://")
    clock = Clock()
    instances_seen = check_provisional_crosses_instances(balancer, token)

    stop_writers = threading.Event()
    writers = [Writer(i) for i in range(WRITERS)]
    subscribers = [Subscriber(f"{agent}-{n}", agent) for agent in AGENTS for n in range(2 if agent == "shared" else 1)]
    deadline = time.monotonic() + 100
    threads = [
        threading.Thread(target=w.run, args=(balancer, token, clock, stop_writers), daemon=True) for w in writers
    ]
    threads += [
        threading.Thread(target=s.run, args=(balancer, token, clock, deadline), daemon=True) for s in subscribers
    ]
    for thread in threads:
        thread.start()

    def acked() -> int:
        return sum(len(w.acked) for w in writers)

    assert wait_until(lambda: acked() >= 60, timeout=30), "writers made no progress"
    clock.phase = "killed"
    first.kill()
    time.sleep(1.5)
    first.start()
    clock.phase = "recovered"
    # As in a rolling restart: the next instance stops only once the balancer
    # sends to the restarted one again (nginx retries it after fail_timeout).
    served_by_first = sum(w.upstreams[first_address] for w in writers)
    assert wait_until(lambda: sum(w.upstreams[first_address] for w in writers) >= served_by_first + 20, timeout=30), (
        "the balancer never came back to the restarted instance"
    )

    # Graceful stop of the other instance while the load goes on.
    clock.phase = "draining"
    second.process.popen.send_signal(signal.SIGTERM)
    readyz = httpx.get(second.url("/readyz"), timeout=5)
    assert readyz.status_code == 503 and readyz.json()["reason"] == "shutting_down"
    assert second.process.wait(timeout=30) == 0
    assert "timeout graceful shutdown exceeded" not in second.output and "SIGKILL" not in second.output
    time.sleep(1)
    clock.phase = "one-up"
    before = acked()
    assert wait_until(lambda: acked() >= before + 30, timeout=30), "no progress on the surviving instance"
    stop_writers.set()
    for thread in threads[:WRITERS]:
        thread.join(timeout=30)

    stored = stored_rows(database)
    for subscriber in subscribers:
        subscriber.target = len(stored[subscriber.agent])
    for thread in threads[WRITERS:]:
        thread.join(timeout=max(deadline - time.monotonic(), 1))

    # --- the figures --------------------------------------------------------
    all_acked = {item_id: where for w in writers for item_id, where in w.acked.items()}
    stored_at = {item_id: (agent, seq) for agent, rows in stored.items() for seq, item_id in rows}
    lost = [item_id for item_id, where in all_acked.items() if stored_at.get(item_id) != where]
    duplicates = sum(n - 1 for agent, rows in stored.items() for n in Counter(i for _, i in rows).values())
    gaps = sum(1 for rows in stored.values() for k, (seq, _) in enumerate(rows, 1) if seq != k)
    subscriber_faults = {
        s.name: (len(s.seqs), len(stored[s.agent]))
        for s in subscribers
        if s.seqs != list(range(1, len(stored[s.agent]) + 1)) or s.item_ids != [i for _, i in stored[s.agent]]
    }
    stream_upstreams = set().union(*(s.upstreams for s in subscribers))
    figures = {
        "transport": transport,
        "acked": len(all_acked),
        "stored": sum(len(rows) for rows in stored.values()),
        "acks_lost": len(lost),
        "replayed_batches": sum(w.replayed for w in writers),
        "duplicates": duplicates,
        "gaps": gaps,
        "subscribers_wrong": len(subscriber_faults),
        "resumed_with_last_event_id": sum(s.resumed for s in subscribers),
        "resumed_on_the_other_instance": sum(s.moved for s in subscribers),
        "streams_cut_by_kill": sum(s.cut for s in subscribers),
        "streams_ended_by_drain": sum(s.ended for s in subscribers),
        "5xx_graceful_stop": clock.count("draining", "5xx"),
        "5xx_kill": clock.count("killed", "5xx"),
        "errors_by_phase": {phase: dict(errors) for phase, errors in clock.errors.items()},
        "stream_upstreams": len(stream_upstreams),
        "write_upstreams": len(set().union(*(w.upstreams for w in writers))),
    }
    print("MULTI-INSTANCE " + json.dumps(figures))

    assert len(instances_seen) == 2
    assert not lost, lost[:10]
    assert duplicates == 0 and gaps == 0
    assert not subscriber_faults, subscriber_faults
    assert figures["resumed_with_last_event_id"] >= 10 and figures["resumed_on_the_other_instance"] >= 1
    assert len(stream_upstreams) == 2 and figures["write_upstreams"] == 2, figures
    # Only a crash may cost a client an error (a request in flight on the killed instance);
    # a graceful stop, and the time both instances are up, cost none.
    for phase in ("both-up", "recovered", "draining", "one-up"):
        assert not clock.errors.get(phase), figures
