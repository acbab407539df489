"""Retries against a live server: a connection cut after the server did the work, a server stopped
and started mid-append, 503s with ``Retry-After`` (canned by the proxy, and SQLite's real ``busy``)."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from chartr_client import NO_RETRY, Client, ConnectionFailed, NewItem, RetryPolicy, errors

from tests.clients.python.conftest import Live
from tests.clients.python.proxy import Proxy
from tests.process.live_support import ServerProcess

APPEND = b"POST /api/v1/agents/"


def rows(client, agent_id):
    return [(row.seq, row.item_id) for row in client.iter_timeline(agent_id)]


def test_an_append_cut_off_after_its_commit_is_retried_with_the_same_item_id_and_stored_once(
    live, client, workspace, proxy
):
    client.create_agent(workspace.id, "claude", agent_id="cut")
    proxy.cut(APPEND)
    with live.client(base_url=proxy.base_url) as through:
        result = through.append("cut", [{"type": "user_message", "text": "once"}])
    assert proxy.seen(APPEND) == 2  # the first attempt reached the server, its answer never came back
    assert not result.created  # the retry found the item committed: 200, the original seq
    assert rows(client, "cut") == [(1, result.rows[0].item_id)]


def test_without_retries_the_cut_is_an_error_and_the_item_is_stored(live, client, workspace, proxy):
    client.create_agent(workspace.id, "claude", agent_id="no-retry")
    proxy.cut(APPEND)
    with live.client(base_url=proxy.base_url, retry=NO_RETRY) as through, pytest.raises(ConnectionFailed):
        through.append("no-retry", [NewItem({"type": "user_message", "text": "x"}, "x1")])
    assert rows(client, "no-retry") == [(1, "x1")]


def test_a_create_cut_off_is_retried_with_the_same_idempotency_key_and_creates_once(live, client, proxy, tmp_path):
    proxy.cut(b"POST /api/v1/projects")
    with live.client(base_url=proxy.base_url) as through:
        project = through.create_project(f"/srv/once/{tmp_path.name}", "git")
    assert proxy.seen(b"POST /api/v1/projects") == 2
    assert [p.id for p in client.iter_projects(directory=project.directory)] == [project.id]


def test_a_patch_cut_off_is_not_sent_again(live, client, workspace, proxy):
    """Its first attempt may have moved the version its If-Match names: the caller decides."""
    agent = client.create_agent(workspace.id, "claude", agent_id="patch")
    proxy.cut(b"PATCH /api/v1/agents/patch")
    with live.client(base_url=proxy.base_url) as through, pytest.raises(ConnectionFailed):
        through.update_agent("patch", {"title": "t"}, if_version=agent.version)
    assert proxy.seen(b"PATCH") == 1
    assert client.get_agent("patch").title == "t"


def test_an_append_waits_out_a_server_stopped_and_started_again(live, client, workspace):
    client.create_agent(workspace.id, "claude", agent_id="restart")
    client.append("restart", [NewItem({"type": "user_message", "text": "before"}, "before")])
    live.server.stop()
    restarted = threading.Thread(target=lambda: (time.sleep(1), live.server.start()))
    restarted.start()
    try:
        result = client.append("restart", [NewItem({"type": "user_message", "text": "after"}, "after")])
    finally:
        restarted.join(timeout=90)
    assert result.created and [row.seq for row in result.rows] == [2]
    assert rows(client, "restart") == [(1, "before"), (2, "after")]


def test_a_stopped_server_fails_after_the_bounded_retries(live, workspace):
    live.server.stop()
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.05)
    with Client(live.base_url, live.token, retry=policy) as client:
        started = time.monotonic()
        with pytest.raises(ConnectionFailed):
            client.append("anyone", [{"type": "user_message", "text": "x"}])
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("code", ["maintenance", "busy"])
def test_503_is_retried_after_retry_after(live, client, workspace, proxy, code):
    client.create_agent(workspace.id, "claude", agent_id=f"wait-{code}")
    proxy.answer(APPEND, 503, code, retry_after=2)
    with live.client(base_url=proxy.base_url) as through:
        started = time.monotonic()
        result = through.append(f"wait-{code}", [NewItem({"type": "user_message", "text": "x"}, "x")])
        waited = time.monotonic() - started
    assert waited >= 2, waited  # Retry-After, not the 0.1 s backoff
    assert proxy.seen(APPEND) == 2 and result.created and result.rows[0].seq == 1


def test_database_unavailable_is_retried_only_for_a_request_that_repeats_safely(live, client, workspace, proxy):
    # The database refused or lost the connection, perhaps at the commit: an append (its items carry
    # item_ids) is sent again and stored once; a PATCH, whose first attempt may have moved the
    # version its If-Match names, is not.
    agent = client.create_agent(workspace.id, "claude", agent_id="db-gone")
    proxy.answer(APPEND, 503, "database_unavailable", retry_after=1)
    with live.client(base_url=proxy.base_url) as through:
        result = through.append("db-gone", [NewItem({"type": "user_message", "text": "x"}, "x")])
    assert proxy.seen(APPEND) == 2 and result.rows[0].seq == 1
    assert rows(client, "db-gone") == [(1, "x")]

    proxy.answer(b"PATCH /api/v1/agents/db-gone", 503, "database_unavailable", retry_after=0)
    with live.client(base_url=proxy.base_url) as through, pytest.raises(errors.DatabaseUnavailable):
        through.update_agent("db-gone", {"title": "t"}, if_version=agent.version)
    assert proxy.seen(b"PATCH") == 1


def test_503_retries_are_bounded_and_end_in_the_typed_error(live, client, workspace, proxy):
    client.create_agent(workspace.id, "claude", agent_id="refused")
    proxy.answer(APPEND, 503, "maintenance", retry_after=0, times=10)
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.05)
    with live.client(base_url=proxy.base_url, retry=policy) as through, pytest.raises(errors.Maintenance) as refused:
        through.append("refused", [{"type": "user_message", "text": "x"}])
    assert proxy.seen(APPEND) == 3 and refused.value.retry_after == 0
    assert rows(client, "refused") == []


@pytest.mark.own_databases
def test_sqlite_busy_from_the_real_server_is_retried(tmp_path, scratch_db):
    """Another process holds SQLite's write lock past CHARTR_SQLITE_TIMEOUT: the server answers 503
    ``busy`` with Retry-After, and the client's append goes through once the lock is released."""
    database = scratch_db("sqlite", migrated=True, purpose="busy")
    server = ServerProcess(tmp_path, database=database, env={"CHARTR_SQLITE_TIMEOUT": "1"})
    token = server.setup(["busy"])["token"]
    with server:
        proxy = Proxy(server.port)
        lock = sqlite3.connect(database.path, timeout=5, isolation_level=None, check_same_thread=False)
        try:
            lock.execute("BEGIN IMMEDIATE")
            released = threading.Timer(4, lambda: lock.execute("COMMIT"))
            released.start()
            with Live(server, token).client(base_url=proxy.base_url) as client:
                started = time.monotonic()
                result = client.append("busy", [NewItem({"type": "user_message", "text": "x"}, "x")])
                waited = time.monotonic() - started
            released.join()
        finally:
            lock.close()
            proxy.close()
    assert waited >= 3, waited
    assert proxy.seen(APPEND) >= 2  # refused while the lock was held, then stored
    assert result.created and result.rows[0].seq == 1
