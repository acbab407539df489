"""A page on another origin follows an agent's timeline in a real browser, with the documented
client (docs/api.md, "Stream tickets"): chromium (Debian's, driven by Playwright; never
``playwright install``) loads a page from a second local HTTP server, on another origin
than chartr's, which runs the ``followTimeline`` snippet taken from docs/api.md as it is written.

The page mints a ticket (a CORS preflight, then a POST with the token), opens the stream with
``EventSource`` and receives the rows; chartr restarts (on the same address) while rows are
committed behind its back; the page mints a fresh ticket and resumes with ``after_seq``, and
holds every seq once, in order, with no gap. An origin not in ``CHARTR_CORS_ORIGINS`` gets
nothing, and the access log shows no ticket.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import socket
import threading
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.browser import SERVER_START_TIMEOUT, chromium
from tests.support.processes import REPO, Server, isolated_env, python

pytestmark = [pytest.mark.browser, pytest.mark.process]

AGENT = "ticket-browser-agent"
#: The page's origin: another address (and port) than chartr's 127.0.0.1; and one chartr is not told of.
PAGE_HOST = "127.0.0.2"
STRANGER_HOST = "127.0.0.3"
SETUP = """
import json, sys
from tokens.services import create_api_token
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
project = create_project(directory="/srv/browser/tickets", kind="git")
workspace = create_workspace(project=project, directory="/srv/browser/tickets/w", kind="checkout")
create_agent(workspace=workspace, provider="claude", agent_id=sys.argv[-1])
reader, writer = create_api_token(name="page", read_only=True)[1], create_api_token(name="agent")[1]
print("SETUP " + json.dumps({"reader": reader, "writer": writer}))
"""
#: Rows committed while chartr is down: straight through the service, as another process would.
APPEND = """
import sys
from timeline.services import NewTimelineItem, append_timeline_items
texts = sys.argv[-1].split(",")
append_timeline_items(agent_id=sys.argv[-2], items=[NewTimelineItem(item={"type": "user_message", "text": t}) for t in texts])
"""
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>follow</title></head>
<body><pre id="log"></pre>
<script>
%(snippet)s
window.seqs = [];
window.start = (base, token, agent) => {
  window.follower = followTimeline(base, token, agent, { onRow: (row) => window.seqs.push(row.seq) });
};
window.tryMint = async (base, token, agent) => {
  try {
    const response = await fetch(`${base}/api/v1/agents/${agent}/timeline/stream-tickets`, {
      method: "POST", headers: { Authorization: `Bearer ${token}` },
    });
    return `status ${response.status}`;
  } catch (error) {
    return `refused: ${error.name}`;
  }
};
</script></body></html>
"""


def documented_snippet() -> str:
    """The ``followTimeline`` function exactly as docs/api.md shows it."""
    doc = (REPO / "docs" / "api.md").read_text()
    blocks = re.findall(r"```js\n(.*?)```", doc, flags=re.DOTALL)
    [snippet] = [block for block in blocks if "function followTimeline(" in block]
    return snippet


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@pytest.fixture
def page_origins(tmp_path):
    """Two more HTTP servers (two more origins) serving the page that follows the timeline."""
    root = tmp_path / "page"
    root.mkdir()
    (root / "index.html").write_text(PAGE % {"snippet": documented_snippet()})
    handler = functools.partial(QuietHandler, directory=str(root))
    servers = [http.server.ThreadingHTTPServer((host, 0), handler) for host in (PAGE_HOST, STRANGER_HOST)]
    for httpd in servers:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield [f"http://{httpd.server_address[0]}:{httpd.server_address[1]}" for httpd in servers]
    finally:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the library's signature
        pass


@pytest.fixture
def chartr(tmp_path, scratch_db, page_origins):
    """chartr on a fixed address (so a restart keeps it), with the page's origin in CHARTR_CORS_ORIGINS."""
    database = scratch_db(migrated=True, purpose="ticketbrowser")
    env = isolated_env(
        tmp_path,
        CHARTR_DEBUG="0",
        CHARTR_WORKERS="1",
        CHARTR_BIND=f"127.0.0.1:{free_port()}",
        CHARTR_CORS_ORIGINS=page_origins[0],
        CHARTR_ACCESS_LOG="1",
        CHARTR_SSE_KEEPALIVE_SECONDS="1",
        **database.env(),
    )
    result = python(SETUP, AGENT, env=env)
    setup = next((line for line in result.stdout.splitlines() if line.startswith("SETUP ")), None)
    assert setup, result.stderr
    with Server(env, tmp_path / "server.log", start_timeout=SERVER_START_TIMEOUT) as server:
        yield server, env, json.loads(setup.split(" ", 1)[1])


@pytest.fixture
def browser():
    with chromium() as browser:
        yield browser


def append(server: Server, token: str, *texts: str) -> None:
    response = httpx.post(
        server.url(f"/api/v1/agents/{AGENT}/timeline"),
        json={"items": [{"item": {"type": "user_message", "text": text}} for text in texts]},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


def wait_for_seqs(page, count: int, timeout: float = 30) -> list[int]:
    page.wait_for_function(f"window.seqs.length >= {count}", timeout=timeout * 1000)
    return page.evaluate("window.seqs")


def test_a_page_on_another_origin_follows_across_a_restart_without_a_gap(browser, chartr, page_origins):
    server, env, tokens = chartr
    reader, writer = tokens["reader"], tokens["writer"]
    page_origin, stranger = page_origins
    page = browser.new_context().new_page()
    page.set_default_timeout(30_000)
    streams: list[str] = []
    page.on("request", lambda request: streams.append(request.url) if "/timeline/stream?" in request.url else None)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    # an origin chartr was not told of gets no answer it may read
    page.goto(f"{stranger}/index.html")
    assert page.evaluate("([b, t, a]) => tryMint(b, t, a)", [server.base_url, reader, AGENT]).startswith("refused")

    page.goto(f"{page_origin}/index.html")
    assert page.evaluate("([b, t, a]) => tryMint(b, t, a)", [server.base_url, reader, AGENT]) == "status 201"
    append(server, writer, "one", "two", "three")
    page.evaluate("([b, t, a]) => start(b, t, a)", [server.base_url, reader, AGENT])
    assert wait_for_seqs(page, 3) == [1, 2, 3]
    append(server, writer, "four", "five")
    assert wait_for_seqs(page, 5) == [1, 2, 3, 4, 5]

    server.stop()
    result = python(APPEND, AGENT, "six,seven,eight", env=env)
    assert result.returncode == 0, result.stderr
    server.start()
    append(server, writer, "nine", "ten")
    assert wait_for_seqs(page, 10, timeout=60) == list(range(1, 11))
    time.sleep(1.5)  # nothing more, nothing twice
    assert page.evaluate("window.seqs") == list(range(1, 11))
    assert not errors, errors

    # each connection had its own ticket, and the reconnect resumed after the last seq held
    queries = [parse_qs(urlsplit(url).query) for url in streams]
    assert len(queries) >= 2
    assert queries[0]["after_seq"] == ["0"] and queries[-1]["after_seq"] == ["5"]
    tickets = [query["ticket"][0] for query in queries]
    assert len(set(tickets)) == len(tickets)
    log = server.log()
    assert "ticket=[redacted]" in log
    assert not any(ticket in log for ticket in tickets)
