"""The session-store seam: ``ChartrSessionStore`` over a live server (sync and async) and ``NoopSessionStore``."""

from __future__ import annotations

import asyncio

import pytest
from chartr_client import (
    AsyncChartrSessionStore,
    AsyncClient,
    AsyncNoopSessionStore,
    AsyncSessionStore,
    ChartrSessionStore,
    NoopSessionStore,
    SessionNotOwned,
    SessionStore,
)

from tests.clients.python.conftest import PATIENT

HI = {"type": "user_message", "text": "hi"}
HELLO = {"type": "assistant_message", "text": "hello", "model": {"name": "m", "tokens": [1, 2]}}


def test_a_session_is_an_agent_and_its_entries_are_its_timeline(client, workspace):
    store = ChartrSessionStore(client, workspace_id=workspace.id, provider="loop")
    assert isinstance(store, SessionStore)
    assert store.latest_session() is None
    assert store.load_entries("s-1") == []

    store.append_entry("s-1", HI)
    store.append_entry("s-1", HELLO, entry_id="e-2")
    store.append_entry("s-1", HELLO, entry_id="e-2")  # a repeat with its id stores nothing twice
    assert store.load_entries("s-1") == [HI, HELLO]

    agent = client.get_agent("s-1")
    assert (agent.workspace_id, agent.provider, agent.head_seq) == (workspace.id, "loop", 2)
    assert [row.item_id for row in client.iter_timeline("s-1")][1] == "e-2"


def test_latest_session_is_the_stores_most_recently_active_one(client, workspace):
    store = ChartrSessionStore(client, workspace_id=workspace.id, provider="loop")
    other = ChartrSessionStore(client, workspace_id=workspace.id, provider="another-embedder")
    store.append_entry("older", HI)
    store.append_entry("newer", HI)
    assert store.latest_session() == "newer"
    store.append_entry("older", HELLO)
    assert store.latest_session() == "older"
    other.append_entry("theirs", HI)  # newest of all, but another provider's
    assert store.latest_session() == "older" and other.latest_session() == "theirs"
    client.archive_agent("older")
    assert store.latest_session() == "newer"


def test_a_store_refuses_an_agent_that_is_not_its_own(client, workspace):
    client.create_agent(workspace.id, "someone-else", agent_id="taken")
    store = ChartrSessionStore(client, workspace_id=workspace.id, provider="loop")
    with pytest.raises(SessionNotOwned):
        store.append_entry("taken", HI)
    with pytest.raises(SessionNotOwned):
        store.load_entries("taken")
    assert client.get_agent("taken").head_seq == 0


def test_noop_stores_keep_nothing():
    store = NoopSessionStore()
    assert isinstance(store, SessionStore)
    store.append_entry("s", HI)
    assert store.load_entries("s") == [] and store.latest_session() is None

    async def scenario():
        async_store = AsyncNoopSessionStore()
        await async_store.append_entry("s", HI)
        return isinstance(async_store, AsyncSessionStore), await async_store.load_entries("s")

    assert asyncio.run(scenario()) == (True, [])


def test_the_async_store_over_the_async_client(live, workspace):
    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as aclient:
            store = AsyncChartrSessionStore(aclient, workspace_id=workspace.id, provider="async-loop")
            assert isinstance(store, AsyncSessionStore)
            await store.append_entry("a-1", HI, entry_id="one")
            await store.append_entry("a-1", HELLO)
            await store.append_entry("a-1", HI, entry_id="one")
            return await store.load_entries("a-1"), await store.latest_session(), await store.load_entries("none")

    assert asyncio.run(scenario()) == ([HI, HELLO], "a-1", [])
