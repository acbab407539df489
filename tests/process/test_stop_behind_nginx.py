"""A graceful stop behind Debian's nginx, under load and idle, SIGTERM to the master or to the whole group.

One chartr instance, started by the entrypoint with gunicorn.conf.py as
deployed (two workers and the Redis transport on PostgreSQL, one worker on
SQLite), behind nginx serving ``deploy/nginx/chartr.conf`` (HTTP/1.1
keep-alive to the instance). Under load, keep-alive clients append and read
through nginx and a few live streams are open when the signal comes; the
clients go on until every process has exited. What a stop promises
(docs/deploy.md, "Stopping"):

- every process exits by itself after ``CHARTR_DRAIN_SECONDS`` and a moment,
  never at gunicorn's grace timeout, and no worker is killed;
- a request sent before the signal or during the drain gets its answer from
  chartr: never a 502 or 504 from nginx, never a cut response, and an append
  acknowledged is stored;
- an open stream ends cleanly (a complete response) at once; a new stream
  during the drain is refused with 503 ``shutting_down``;
- once the drain is over the instance accepts no connection: with no other
  instance nginx answers 502 (``connect() failed``), never 504.

The signal goes to gunicorn's master alone (an orchestrator's stop) or to the
whole process group (systemd's default), where each worker hears it twice.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from tests.conftest import skip_or_fail
from tests.process.live_support import REDIS_URL, EventReader, ServerProcess, redis_available
from tests.support.balancer import Nginx, free_port, nginx_binary, upstream_of
from tests.support.processes import ENTRYPOINT, group_members, libpq_url, run_engine

pytestmark = [pytest.mark.process, pytest.mark.timeout(90)]

DRAIN_SECONDS = 2
#: Far above the drain: a worker still alive at it is killed, and the stop takes this long.
GRACEFUL_TIMEOUT = 20
#: After the drain, the requests in flight finish (the blocked append a second after it) and
#: each interpreter exits: a second or two, up to six seen on busy shared cores; never the grace timeout.
EXIT_SECONDS = 9
#: Requests sent this long before the drain ends may race the listener's close (they are
#: still on their way when accepting stops); every earlier one must be answered by chartr.
RACE_MARGIN = 0.5
API_CLIENTS = 6
STREAMS = 3
AGENTS = [f"load-{n}" for n in range(API_CLIENTS)]
BLOCKED = "blocked"  # its append waits on a lock the test holds until after the drain


class WriteLock:
    """The lock an append to ``BLOCKED`` needs, held from another connection until ``release``:
    its agent's head row on PostgreSQL, the database's write lock on SQLite (every append waits)."""

    def __init__(self, database):
        self.database = database
        self.held = threading.Event()
        self.released = threading.Event()
        self.thread = threading.Thread(target=self.hold, daemon=True)

    def hold(self) -> None:
        if self.database.engine == "sqlite":
            conn = sqlite3.connect(self.database.path, timeout=20, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
        else:
            conn = psycopg.connect(libpq_url(self.database.url))
            conn.execute("SELECT 1 FROM timeline_head WHERE agent_id = %s FOR UPDATE", (BLOCKED,))
        self.held.set()
        self.released.wait(timeout=30)
        conn.execute("COMMIT")
        conn.close()

    def __enter__(self) -> WriteLock:
        self.thread.start()
        assert self.held.wait(timeout=10)
        return self

    def __exit__(self, *exc_info) -> None:
        self.released.set()
        self.thread.join(timeout=10)


@dataclass
class Outcome:
    what: str  # append, read, stream
    started: float
    ended: float
    status: int | None = None
    code: str | None = None  # chartr's error code, or "nginx" for nginx's own page
    error: str | None = None  # a transport error, or how a stream ended
    upstream: str = ""


def answer_of(response: httpx.Response) -> str | None:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "nginx" if b"nginx" in response.content else None


class Load:
    """Keep-alive clients through nginx until ``stop``: appends and reads, and streams that reconnect."""

    def __init__(self, balancer: Nginx, token: str):
        self.balancer = balancer
        self.token = token
        self.stop = threading.Event()
        self.outcomes: list[Outcome] = []
        self.acked: set[str] = set()
        self.threads = [
            threading.Thread(target=self.api_client, args=(n,), daemon=True) for n in range(API_CLIENTS)
        ] + [threading.Thread(target=self.stream_client, args=(AGENTS[n],), daemon=True) for n in range(STREAMS)]

    def start(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> list[Outcome]:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)
        return sorted(self.outcomes, key=lambda o: o.started)

    def api_client(self, index: int) -> None:
        agent = AGENTS[index]
        url = self.balancer.url(f"/api/v1/agents/{agent}/timeline")
        with httpx.Client(headers={"Authorization": f"Bearer {self.token}"}, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                item_id = f"{agent}-{n}"
                if n % 2:
                    what = "append"
                    item = {"item": {"type": "user_message", "text": f"{n}"}, "item_id": item_id}
                    request = client.build_request("POST", url, json={"items": [item]})
                else:
                    what, request = "read", client.build_request("GET", url)
                outcome = Outcome(what, time.monotonic(), 0)
                try:
                    response = client.send(request)
                    outcome.status, outcome.code = response.status_code, answer_of(response)
                    outcome.upstream = upstream_of(response)
                    if what == "append" and response.status_code in (200, 201):
                        self.acked.add(item_id)
                except httpx.HTTPError as exc:
                    outcome.error = type(exc).__name__
                outcome.ended = time.monotonic()
                self.outcomes.append(outcome)
                time.sleep(0.005)

    def blocked_append(self) -> threading.Thread:
        """One append in flight across the end of the drain: its thread waits in the database."""

        def run() -> None:
            item = {"item": {"type": "user_message", "text": "blocked"}, "item_id": "blocked-1"}
            outcome = Outcome("blocked", time.monotonic(), 0)
            try:
                response = httpx.post(
                    self.balancer.url(f"/api/v1/agents/{BLOCKED}/timeline"),
                    json={"items": [item]},
                    headers={"Authorization": f"Bearer {self.token}"},
                    timeout=30,
                )
                outcome.status, outcome.code = response.status_code, answer_of(response)
                if response.status_code == 201:
                    self.acked.add("blocked-1")
            except httpx.HTTPError as exc:
                outcome.error = type(exc).__name__
            outcome.ended = time.monotonic()
            self.outcomes.append(outcome)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)
        return thread

    def stream_client(self, agent: str) -> None:
        url = self.balancer.url(f"/api/v1/agents/{agent}/timeline/stream")
        with httpx.Client() as client:
            last = None
            while not self.stop.is_set():
                outcome = Outcome("stream", time.monotonic(), 0)
                try:
                    reader = EventReader(
                        client, url + ("" if last else "?after_seq=0"), token=self.token, last_event_id=last
                    )
                except httpx.HTTPError as exc:
                    outcome.error, outcome.ended = type(exc).__name__, time.monotonic()
                    self.outcomes.append(outcome)
                    time.sleep(0.1)
                    continue
                try:
                    outcome.status = reader.response.status_code
                    outcome.upstream = upstream_of(reader.response)
                    if outcome.status != 200:
                        reader.response.read()
                        outcome.code = answer_of(reader.response)
                        time.sleep(0.2)
                        continue
                    reader.stop_when = self.stop.is_set
                    try:
                        while True:
                            event = reader.next()
                            last = event.id or last
                    except EOFError:
                        outcome.error = "stopped" if self.stop.is_set() else "ended"
                    except httpx.HTTPError as exc:
                        outcome.error = type(exc).__name__
                finally:
                    outcome.ended = time.monotonic()
                    self.outcomes.append(outcome)
                    reader.close()


def chartr_answered(outcome: Outcome) -> bool:
    """Answered by chartr as a stop promises: served, or a new stream refused while draining."""
    if outcome.what == "stream":
        if outcome.status == 503:
            return outcome.code == "shutting_down"
        return outcome.status == 200 and outcome.error in ("ended", "stopped")
    return outcome.error is None and outcome.status in (200, 201)


def by_phase(outcomes: list[Outcome], signalled: float) -> tuple[list[Outcome], list[Outcome], list[Outcome]]:
    """Sent before the signal, during the drain (but its last ``RACE_MARGIN``), and later."""
    drain_end = signalled + DRAIN_SECONDS
    before = [o for o in outcomes if o.started < signalled]
    during = [o for o in outcomes if signalled <= o.started < drain_end - RACE_MARGIN]
    return before, during, [o for o in outcomes if o.started >= drain_end - RACE_MARGIN]


def tally(outcomes: list[Outcome]) -> dict[str, int]:
    return dict(Counter(f"{o.what} {o.status} {o.code or o.error or ''}".strip() for o in outcomes))


@pytest.fixture
def deployment(tmp_path, scratch_db):
    if nginx_binary() is None:
        skip_or_fail("nginx is not installed (apt-get install nginx-light)")
    engine = run_engine()
    env = {
        "CHARTR_LOG_LEVEL": "INFO",  # the harness reads the port from gunicorn's "Listening at"
        "CHARTR_COLLECTSTATIC": "0",
        "CHARTR_DRAIN_SECONDS": str(DRAIN_SECONDS),
        "CHARTR_GRACEFUL_TIMEOUT": str(GRACEFUL_TIMEOUT),
        "CHARTR_BIND": f"127.0.0.1:{free_port()}",
        "CHARTR_WORKERS": "1",
    }
    if engine == "postgresql":
        if not redis_available():
            skip_or_fail(f"Redis is not reachable at {REDIS_URL}")
        env.update(CHARTR_WORKERS="2", CHARTR_LIVE_TRANSPORT="redis", CHARTR_REDIS_URL=REDIS_URL)
    database = scratch_db(migrated=True)
    server = ServerProcess(tmp_path, database=database, env=env)
    server.command = [str(ENTRYPOINT)]
    server.start_timeout = 90
    token = server.setup([*AGENTS, BLOCKED])["token"]
    server.start()
    (tmp_path / "nginx").mkdir()
    balancer = Nginx(tmp_path / "nginx", [int(env["CHARTR_BIND"].rsplit(":", 1)[1])]).start()
    yield server, balancer, database, token, int(env["CHARTR_WORKERS"])
    balancer.stop()
    server.stop()


def block_across_the_drain_end(running: Load, database, signalled: float) -> None:
    """Late in the drain, an append that waits in the database (a sync thread blocked in a
    query) until a second after accepting stopped; on SQLite every append waits then."""
    time.sleep(max(signalled + DRAIN_SECONDS - 0.7 - time.monotonic(), 0))
    with WriteLock(database):
        running.blocked_append()
        time.sleep(max(signalled + DRAIN_SECONDS + 1 - time.monotonic(), 0))


def send_sigterm(server: ServerProcess, how: str) -> None:
    if how == "master":
        server.process.popen.send_signal(signal.SIGTERM)
    else:
        server.process.signal_group(signal.SIGTERM)  # each worker hears it itself and from the master


def wait_all_exited(server: ServerProcess, signalled: float) -> tuple[float, float]:
    """Seconds from the signal until the master exited, and until no process of its group is left."""
    master = None
    deadline = signalled + GRACEFUL_TIMEOUT + 10
    while time.monotonic() < deadline:
        if master is None and server.process.popen.poll() is not None:
            master = time.monotonic() - signalled
        if master is not None and not group_members(server.process.pid):
            return master, time.monotonic() - signalled
        time.sleep(0.02)
    raise AssertionError(f"still running {deadline - signalled:.0f}s after SIGTERM:\n{server.output}")


@pytest.mark.parametrize("load", ["idle", "load"])
@pytest.mark.parametrize("how", ["master", "group"])
def test_a_stop_behind_nginx_drains_answers_everything_sent_before_and_exits_in_time(deployment, how, load):
    server, balancer, database, token, workers = deployment
    assert len([m for m in group_members(server.process.pid) if "gunicorn" in m]) == workers + 1
    # Idle: nginx still holds keep-alive connections to the instance from a few earlier requests.
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:
        for _ in range(4):
            assert client.get(balancer.url("/api/v1/agents/load-0/timeline")).status_code == 200
    running = Load(balancer, token).start() if load == "load" else None
    time.sleep(1.5)

    send_sigterm(server, how)
    signalled = time.monotonic()
    blocker = threading.Thread(target=block_across_the_drain_end, args=(running, database, signalled), daemon=True)
    if running:
        blocker.start()
    master_exited, all_exited = wait_all_exited(server, signalled)
    time.sleep(0.5)  # the clients meet the stopped instance too
    outcomes = running.finish() if running else []
    if running:
        blocker.join(timeout=10)

    drain_end = signalled + DRAIN_SECONDS
    before, during, after = by_phase(outcomes, signalled)
    unanswered = [o for o in before + during if not chartr_answered(o)]
    summary = {"how": how, "load": load, "workers": workers, "master_exited": round(master_exited, 2)}
    summary |= {"all_exited": round(all_exited, 2), "before": tally(before), "during": tally(during)}
    summary |= {"after": tally(after), "in_flight_at_signal": sum(o.ended > signalled for o in before)}
    print("STOP-BEHIND-NGINX " + json.dumps(summary))

    assert server.process.popen.returncode == 0, server.output
    # It drained for the whole period, then every process went at once: never at the grace timeout.
    assert DRAIN_SECONDS <= all_exited < DRAIN_SECONDS + EXIT_SECONDS < GRACEFUL_TIMEOUT, summary
    for line in ("WORKER TIMEOUT", "SIGKILL", "graceful shutdown exceeded", "Traceback"):
        assert line not in server.output, server.output
    if running is None:
        return
    assert not unanswered, (unanswered[:10], summary, balancer.error_log()[-3000:])
    # Streams open at the signal ended cleanly, at once, not when the instance went.
    open_at_signal = [o for o in before if o.what == "stream" and o.status == 200 and o.ended > signalled]
    assert len(open_at_signal) == STREAMS, summary
    assert all(o.error == "ended" and o.ended < signalled + 1 for o in open_at_signal), open_at_signal
    assert summary["in_flight_at_signal"] > len(open_at_signal), summary
    assert any(o.what == "append" and o.status == 201 for o in during), summary  # still serving while draining
    # After the drain nothing answers but nginx: 502 (the instance refuses connections), never 504.
    assert all(chartr_answered(o) or (o.status == 502 and o.code == "nginx") for o in after), summary
    assert "upstream timed out" not in balancer.error_log()
    # The append that waited in the database past the end of the drain was answered, then the worker went.
    [blocked] = [o for o in outcomes if o.what == "blocked"]
    assert blocked.status == 201 and drain_end + 0.5 < blocked.ended < signalled + all_exited, (blocked, summary)
    stored = {row[0] for row in database.query("SELECT item_id FROM timeline_timelinerow")}
    assert running.acked <= stored, sorted(running.acked - stored)[:10]
