"""The documented browser client (docs/api.md, "Stream tickets": ``followTimeline``, taken from
the doc as written) follows an agent across a server restart without a gap, run by Node with
tests/process/browser_shim.mjs standing in for the browser's ``EventSource`` and cross-origin
``fetch`` (a preflight, ``Origin``, and the answers' CORS headers checked).

It runs wherever Node does; tests/process/test_stream_ticket_browser.py does the same in chromium,
from a page on another origin, where Debian's chromium is installed.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import skip_or_fail
from tests.process.live_support import ServerProcess
from tests.process.test_stream_ticket_browser import APPEND, SETUP, documented_snippet, free_port
from tests.support.processes import python

pytestmark = pytest.mark.process

AGENT = "ticket-client-agent"
PAGE_ORIGIN = "http://page.example:8000"
SHIM = Path(__file__).with_name("browser_shim.mjs")
DRIVER = """
const [base, token, agent] = process.argv.slice(2);
followTimeline(base, token, agent, { onRow: (row) => console.log("ROW " + row.seq) });
"""


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        skip_or_fail("node is missing")
    return found


@pytest.fixture
def chartr(tmp_path, scratch_db):
    """chartr on a fixed address (a restart keeps it), with the page's origin in CHARTR_CORS_ORIGINS."""
    env = {"CHARTR_CORS_ORIGINS": PAGE_ORIGIN, "CHARTR_ACCESS_LOG": "1", "CHARTR_LOG_LEVEL": "INFO"}
    server = ServerProcess(tmp_path, database=scratch_db(migrated=True), env=env)
    address = f"127.0.0.1:{free_port()}"
    server.command = [address if part == "127.0.0.1:0" else part for part in server.command]
    result = python(SETUP, AGENT, env=server.env)
    tokens = next(line for line in result.stdout.splitlines() if line.startswith("SETUP ")).split(" ", 1)[1]
    server.start()
    yield server, json.loads(tokens)
    server.stop()


def append(server, token: str, *texts: str) -> None:
    response = httpx.post(
        server.url(f"/api/v1/agents/{AGENT}/timeline"),
        json={"items": [{"item": {"type": "user_message", "text": text}} for text in texts]},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


class Lines:
    """The client's output, line by line, as it comes."""

    def __init__(self, process: subprocess.Popen):
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(process,), daemon=True).start()

    def _pump(self, process):
        for line in process.stdout:
            self.queue.put(line.rstrip("\n"))

    def rows_until(self, count: int, timeout: float) -> list[int]:
        while len(rows := [int(line[4:]) for line in self.seen if line.startswith("ROW ")]) < count:
            try:
                self.seen.append(self.queue.get(timeout=timeout))
            except queue.Empty:
                raise AssertionError(f"{len(rows)} rows of {count}:\n" + "\n".join(self.seen)) from None
        return rows


def test_the_documented_client_resumes_across_a_restart_without_a_gap(node, chartr, tmp_path):
    server, tokens = chartr
    script = tmp_path / "follow.mjs"
    script.write_text(f"import {str(SHIM)!r};\n{documented_snippet()}\n{DRIVER}")
    process = subprocess.Popen(
        [node, str(script), server.base_url, tokens["reader"], AGENT],
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PAGE_ORIGIN": PAGE_ORIGIN},
    )
    try:
        lines = Lines(process)
        append(server, tokens["writer"], "one", "two", "three")
        assert lines.rows_until(3, timeout=20) == [1, 2, 3]
        server.stop()
        result = python(APPEND, AGENT, "four,five,six", env=server.env)
        assert result.returncode == 0, result.stderr
        server.start()
        append(server, tokens["writer"], "seven", "eight")
        assert lines.rows_until(8, timeout=40) == list(range(1, 9))
        with pytest.raises(AssertionError):
            lines.rows_until(9, timeout=1.5)  # nothing more, nothing twice
    finally:
        process.kill()
        process.wait(timeout=10)
    opened = [parse_qs(urlsplit(line[5:]).query) for line in lines.seen if line.startswith("OPEN ")]
    assert opened[0]["after_seq"] == ["0"] and opened[-1]["after_seq"] == ["3"]
    tickets = [query["ticket"][0] for query in opened]
    assert len(tickets) >= 2 and len(set(tickets)) == len(tickets)
    log = server.log()
    assert "ticket=[redacted]" in log and not any(ticket in log for ticket in tickets)
