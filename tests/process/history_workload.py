"""Concurrent clients of a real server whose every operation is recorded for the history checker.

- writers: each appends batches of 1 to 3 items with unique ``item_id``s to one agent and,
  until answered, sends the same batch again (a retry is safe: the same ids are replayed);
  every attempt is recorded, answered or not;
- readers: read whole timelines over REST (``limit=0``), round robin over the agents;
- followers: one live stream per agent, resuming with ``Last-Event-ID`` and ``?epoch=`` after
  every drop (a ``kill -9``) and, on purpose, every few dozen rows.

The clients follow the server across restarts (``server.port`` is read at each call).
Every loop is bounded in time. tests/support/history_check.py judges what they recorded.
"""

from __future__ import annotations

import threading
import time

import httpx

from tests.process.live_support import EventReader, ServerProcess
from tests.support.history_check import Append, History, Read, Segment

#: How long a writer keeps resending an unanswered batch once the workload is told to stop.
RESOLVE_SECONDS = 60
#: A follower reconnects on purpose after this many rows of one connection.
ROWS_PER_CONNECTION = 40

now = time.monotonic


class Workload:
    def __init__(self, server: ServerProcess, token: str, agents: list[str], *, writers_per_agent: int = 2):
        self.server = server
        self.headers = {"Authorization": f"Bearer {token}"}
        self.token = token
        self.agents = agents
        self.history = History()
        self.unexpected: list[str] = []
        self.resets = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._write, args=(agent, f"{agent}-w{n}"), daemon=True)
            for agent in agents
            for n in range(writers_per_agent)
        ]
        self._threads += [threading.Thread(target=self._follow, args=(agent,), daemon=True) for agent in agents]
        self._threads += [threading.Thread(target=self._read, args=(n,), daemon=True) for n in range(2)]

    # --- control -----------------------------------------------------------

    def start(self) -> Workload:
        for thread in self._threads:
            thread.start()
        return self

    def acknowledged(self) -> int:
        with self._lock:
            return sum(len(append.items) for append in self.history.appends if append.ok)

    def run_for(self, seconds: float, *, at_least: int = 50) -> None:
        """Let the clients work for ``seconds``, and on until ``at_least`` more items are acknowledged (60 s at most)."""
        start, target = now(), self.acknowledged() + at_least
        deadline = start + max(seconds, 60)
        while now() < deadline and (now() < start + seconds or self.acknowledged() < target):
            time.sleep(0.05)
        assert self.acknowledged() >= target, f"only {self.acknowledged()} items acknowledged, {target} expected"

    def finish(self) -> History:
        """Stop every client (writers first resolve their last batch), then read every timeline once more."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=RESOLVE_SECONDS + 15)
        assert not any(thread.is_alive() for thread in self._threads), "a client did not stop"
        with httpx.Client(headers=self.headers) as http:
            for agent in self.agents:
                assert self._read_once(http, agent), f"the final read of {agent} failed"
        return self.history

    def epochs(self) -> dict[str, str]:
        """Each agent's epoch now, from the tail of its timeline."""
        found = {}
        with httpx.Client(headers=self.headers, timeout=30) as http:
            for agent in self.agents:
                response = http.get(self._url(f"/api/v1/agents/{agent}/timeline"), params={"limit": 1})
                assert response.status_code == 200, response.text
                found[agent] = response.json()["epoch"]
        return found

    def _url(self, path: str) -> str:
        port = self.server.port
        if port is None:
            raise httpx.ConnectError("the server is restarting")
        return f"http://127.0.0.1:{port}{path}"

    def _record(self, what: Append | Read | Segment) -> None:
        with self._lock:
            if isinstance(what, Append):
                self.history.appends.append(what)
            elif isinstance(what, Read):
                self.history.reads.append(what)
            else:
                self.history.segments.append(what)

    # --- writers -------------------------------------------------------------

    def _write(self, agent: str, name: str) -> None:
        index = 0
        with httpx.Client(headers=self.headers) as http:
            while not self._stop.is_set():
                items = tuple(f"{name}-{index + k}" for k in range(1 + index % 3))
                index += len(items)
                if not self._append_until_answered(http, agent, items):
                    return

    def _append_until_answered(self, http: httpx.Client, agent: str, items: tuple[str, ...]) -> bool:
        body = {"items": [{"item": {"type": "user_message", "text": item}, "item_id": item} for item in items]}
        give_up = None
        while True:
            if self._stop.is_set():
                give_up = give_up or now() + RESOLVE_SECONDS
                if now() > give_up:
                    return False
            invoked = now()
            try:
                response = http.post(self._url(f"/api/v1/agents/{agent}/timeline"), json=body, timeout=30)
            except httpx.HTTPError:
                self._record(Append(agent, items, invoked, None, None))
                time.sleep(0.1)
                continue
            completed = now()
            if response.status_code in (200, 201):
                answer = response.json()
                seqs = tuple(row["seq"] for row in answer["rows"])
                self._record(Append(agent, items, invoked, completed, True, answer["epoch"], seqs))
                return True
            self._record(Append(agent, items, invoked, completed, False))
            if response.status_code != 503:
                with self._lock:
                    self.unexpected.append(f"append {items}: {response.status_code} {response.text[:200]}")
                return False
            time.sleep(0.1)

    # --- readers -------------------------------------------------------------

    def _read(self, reader: int) -> None:
        turn = reader
        with httpx.Client(headers=self.headers) as http:
            while not self._stop.is_set():
                if not self._read_once(http, self.agents[turn % len(self.agents)]):
                    time.sleep(0.1)
                turn += 1
                time.sleep(0.05)

    def _read_once(self, http: httpx.Client, agent: str) -> bool:
        invoked = now()
        try:
            response = http.get(self._url(f"/api/v1/agents/{agent}/timeline"), params={"limit": 0}, timeout=30)
        except httpx.HTTPError:
            return False
        completed = now()
        if response.status_code != 200:
            with self._lock:
                self.unexpected.append(f"read {agent}: {response.status_code} {response.text[:200]}")
            return False
        page = response.json()
        rows = tuple((row["seq"], row["item_id"]) for row in page["rows"])
        self._record(Read(agent, invoked, completed, page["epoch"], rows))
        return True

    # --- followers -----------------------------------------------------------

    def _follow(self, agent: str) -> None:
        cursor: tuple[str, int] | None = None  # (epoch, last seq) to resume from
        with httpx.Client() as http:
            while not self._stop.is_set():
                cursor, dropped = self._follow_once(http, agent, cursor)
                if dropped:
                    time.sleep(0.1)

    def _follow_once(self, http: httpx.Client, agent: str, cursor: tuple[str, int] | None):
        """One stream connection: its segments recorded; returns the cursor to resume from and whether it dropped."""
        path = f"/api/v1/agents/{agent}/timeline/stream"
        segment: dict | None = None
        received = 0
        try:
            url = self._url(path + (f"?epoch={cursor[0]}" if cursor else ""))
            reader = EventReader(http, url, token=self.token, last_event_id=str(cursor[1]) if cursor else None)
        except httpx.HTTPError:
            return cursor, True
        reader.stop_when = self._stop.is_set
        try:
            if reader.response.status_code != 200:
                return cursor, True  # 503 while the server starts or drains: try again
            while not self._stop.is_set() and received < ROWS_PER_CONNECTION:
                event = reader.next()
                if event.event == "reset" or (event.event == "agent" and segment is None):
                    self._close_segment(agent, segment)
                    segment = {"epoch": event.data["epoch"], "cursor": int(event.id), "rows": []}
                    segment["reset"] = event.event == "reset"
                    self.resets += event.event == "reset"
                    cursor = (segment["epoch"], segment["cursor"])
                elif event.event == "committed":
                    segment["rows"].append((event.data["seq"], event.data["item_id"]))
                    cursor = (segment["epoch"], event.data["seq"])
                    received += 1
            return cursor, False
        except (httpx.HTTPError, EOFError):
            return cursor, True
        finally:
            self._close_segment(agent, segment)
            try:
                reader.close()
            except httpx.HTTPError:
                pass

    def _close_segment(self, agent: str, segment: dict | None) -> None:
        if segment is not None:
            rows = tuple(segment["rows"])
            self._record(Segment(agent, agent, segment["epoch"], segment["cursor"], rows, segment["reset"]))
