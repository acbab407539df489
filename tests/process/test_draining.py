"""SIGTERM to a real gunicorn: readiness fails first, requests in flight finish, streams end cleanly.

The order a load balancer needs (docs/deploy.md, "More than one machine"):
``/readyz`` turns 503 the moment the signal arrives while the server still
accepts connections for ``CHARTR_DRAIN_SECONDS``; a request whose body is
still arriving when the signal comes is answered normally; an open live
stream ends with a complete response (no cut chunk), and a new stream is
refused with 503 so a balancer retries it elsewhere.
"""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from tests.process.live_support import EventReader, ServerProcess, append

pytestmark = [pytest.mark.process, pytest.mark.timeout(120)]

DRAIN_SECONDS = 3


@pytest.fixture
def server(tmp_path, scratch_db):
    database = scratch_db(migrated=True)
    server = ServerProcess(tmp_path, database=database, env={"CHARTR_DRAIN_SECONDS": str(DRAIN_SECONDS)})
    # The harness's 2 s grace period would end the drain early: gunicorn SIGKILLs its workers then.
    server.command = with_graceful_timeout(server.command, DRAIN_SECONDS + 10)
    yield server
    server.stop()


def send_sigterm(server, how: str) -> None:
    if how == "master":
        server.process.popen.send_signal(signal.SIGTERM)  # to gunicorn's master, as an orchestrator does
    else:
        # To the whole process group, as systemd does by default (KillMode=control-group): each worker
        # hears it from the signal and again from the master, and must drain as if it heard it once.
        server.process.signal_group(signal.SIGTERM)


@pytest.mark.parametrize("how", ["master", "group"])
def test_sigterm_fails_readiness_first_then_finishes_requests_and_ends_streams(server, how):
    token = server.setup(["agent-g"])["token"]
    server.start()
    headers = {"Authorization": f"Bearer {token}"}
    rest_of_body = threading.Event()
    slow_result: dict = {}

    first_half = b'{"items": [{"item": {"type": "user_message", "text": "sent across the SIGTERM"}, '
    second_half = b'"item_id": "slow-1"}]}'

    def slow_body():
        yield first_half
        rest_of_body.wait(timeout=20)
        yield second_half

    def slow_append():
        with httpx.Client() as client:
            try:
                response = client.post(
                    server.url("/api/v1/agents/agent-g/timeline"),
                    content=slow_body(),
                    headers={
                        **headers,
                        "Content-Type": "application/json",
                        # Declared: Django's WSGI side reads no body without a length.
                        "Content-Length": str(len(first_half) + len(second_half)),
                    },
                    timeout=30,
                )
                slow_result["status"] = response.status_code
                slow_result["body"] = response.json()
            except httpx.HTTPError as exc:
                slow_result["error"] = repr(exc)

    with httpx.Client() as client:
        stream = EventReader(client, server.url("/api/v1/agents/agent-g/timeline/stream?after_seq=0"), token=token)
        assert stream.next().event == "agent"
        slow = threading.Thread(target=slow_append, daemon=True)
        slow.start()
        time.sleep(0.5)  # the slow request's headers and first half are in
        assert slow.is_alive()

        send_sigterm(server, how)
        signalled = time.monotonic()

        def draining_answer() -> httpx.Response | None:
            response = httpx.get(server.url("/readyz"), timeout=5)
            return response if response.status_code == 503 else None

        readyz = server_wait(draining_answer, what="/readyz to fail")
        assert readyz.json() == {"status": "unavailable", "reason": "shutting_down"}
        assert readyz.headers["connection"] == "close"
        # Still serving everything but new streams: the process is alive, only not ready.
        assert httpx.get(server.url("/healthz"), timeout=5).status_code == 200
        refused = httpx.get(
            server.url("/api/v1/agents/agent-g/timeline/stream"), headers=headers, timeout=5
        )  # fmt: skip
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "shutting_down"
        assert refused.headers["retry-after"] == "1"
        during = append(client, server, token, "agent-g", [{"item": {"type": "user_message", "text": "during"}}])
        assert during.status_code == 201, during.text
        assert time.monotonic() - signalled < DRAIN_SECONDS  # all of the above happened inside the drain period

        # The open stream ended by itself, with a complete response: no transport error.
        with pytest.raises(EOFError):
            while True:
                stream.next()
        stream.close()

        rest_of_body.set()
        slow.join(timeout=30)
        assert slow_result.get("status") == 201, slow_result
        assert [row["item_id"] for row in slow_result["body"]["rows"]] == ["slow-1"]

    assert server.process.wait(timeout=30) == 0
    assert time.monotonic() - signalled >= DRAIN_SECONDS  # it kept accepting for the whole drain period
    # The worker finished by itself: nothing was cancelled, and gunicorn did not have to kill it.
    assert "running task(s), timeout graceful shutdown exceeded" not in server.output, server.output
    assert "SIGKILL" not in server.output, server.output
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url("/healthz"), timeout=5)


@pytest.mark.parametrize("how", ["master", "group"])
def test_an_idle_server_drains_for_the_whole_period_then_exits_by_itself(server, how):
    server.setup([])
    server.start()
    assert httpx.get(server.url("/readyz"), timeout=5).status_code == 200
    send_sigterm(server, how)
    signalled = time.monotonic()
    seen = []
    while server.process.popen.poll() is None and time.monotonic() - signalled < DRAIN_SECONDS + 15:
        try:
            seen.append((time.monotonic() - signalled, httpx.get(server.url("/readyz"), timeout=2).status_code))
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    assert server.process.wait(timeout=30) == 0
    exited = time.monotonic() - signalled
    # Answering, not ready, for the whole drain period; then gone at once, not at the grace timeout.
    assert {status for _, status in seen} == {503} and seen[-1][0] >= DRAIN_SECONDS - 0.5, seen
    assert DRAIN_SECONDS <= exited < DRAIN_SECONDS + 5, exited
    assert "SIGKILL" not in server.output and "graceful shutdown exceeded" not in server.output, server.output


def with_graceful_timeout(command: list[str], seconds: int) -> list[str]:
    command = list(command)
    command[command.index("--graceful-timeout") + 1] = str(seconds)
    return command


def server_wait(condition, *, what: str, timeout: float = 10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value is not None:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
