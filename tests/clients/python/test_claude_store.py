"""``chartr_client.claude.ChartrSessionStore`` against a live chartr (SQLite or PostgreSQL, as the run's).

The SDK's own conformance suite (``claude_agent_sdk.testing.run_session_store_conformance``)
runs with no contract skipped: every optional method is implemented, so none is left out. Each
contract's fresh store is a fresh namespace on the same server.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from chartr_client import AsyncClient
from chartr_client.claude import ChartrSessionStore
from claude_agent_sdk.testing import run_session_store_conformance

from tests.clients.python.conftest import PATIENT

KEY = {"project_key": "-srv-app", "session_id": "s1"}


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_sdk_conformance_suite_passes_with_no_contract_skipped(live):
    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as client:
            made: list[ChartrSessionStore] = []

            def make_store() -> ChartrSessionStore:
                made.append(ChartrSessionStore(client=client, namespace=f"conformance-{uuid.uuid4().hex[:12]}"))
                return made[-1]

            await run_session_store_conformance(make_store)
            return made

    made = run(scenario())
    # 14 contracts, each with its own store, and the probe that decides what to skip: 15.
    assert len(made) == 15


def test_namespaces_are_tenants_and_the_default_is_shared(live):
    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as client:
            default = ChartrSessionStore(client=client)
            tenant = ChartrSessionStore(client=client, namespace="tenant-a")
            by_url = ChartrSessionStore(base_url=live.base_url, token=live.token)
            await default.append(KEY, [{"type": "user", "uuid": "u1", "text": "default"}])
            await tenant.append(KEY, [{"type": "user", "uuid": "u1", "text": "tenant"}])
            async with by_url:
                seen = await by_url.load(KEY)
            return (
                seen,
                await tenant.load(KEY),
                await tenant.list_sessions("-srv-app"),
                await default.list_sessions("x"),
            )

    seen, tenant, listed, empty = run(scenario())
    assert seen == [{"type": "user", "uuid": "u1", "text": "default"}]
    assert tenant == [{"type": "user", "uuid": "u1", "text": "tenant"}]
    assert [s["session_id"] for s in listed] == ["s1"] and empty == []


def test_big_appends_are_split_under_the_body_limit_and_come_back_whole(live):
    entries = [{"type": "assistant", "uuid": f"u{i}", "text": "x" * 900} for i in range(2500)]
    entries.insert(7, {"type": "summary", "summary": "no uuid", "leafUuid": "u3"})

    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as client:
            store = ChartrSessionStore(client=client, namespace="big", max_body_bytes=256 * 1024)
            await store.append(KEY, entries)
            await store.append(KEY, entries[:50])  # the SDK's retry: uuids ignored, the summary line again
            return await store.load(KEY), await store.list_session_summaries("-srv-app")

    loaded, summaries = run(scenario())
    assert loaded == [*entries, entries[7]]
    assert [s["session_id"] for s in summaries] == ["s1"] and summaries[0]["data"]["summary_hint"] == "no uuid"


def test_concurrent_appends_lose_no_fold_of_the_summary(live):
    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as client:
            stores = [ChartrSessionStore(client=client, namespace="race") for _ in range(2)]
            await asyncio.gather(
                stores[0].append(KEY, [{"type": "user", "uuid": "a", "gitBranch": "main"}]),
                stores[1].append(KEY, [{"type": "custom-title", "customTitle": "raced"}]),
            )
            return await stores[0].list_session_summaries(KEY["project_key"])

    (summary,) = run(scenario())
    assert summary["data"]["git_branch"] == "main" and summary["data"]["custom_title"] == "raced"


@pytest.mark.parametrize("missing", ["base_url", "token"])
def test_a_store_needs_a_server(missing):
    parts = {"base_url": "http://127.0.0.1:9", "token": "t"}
    parts.pop(missing)
    with pytest.raises(TypeError):
        ChartrSessionStore(**parts)


class CountingTransport(httpx.AsyncHTTPTransport):
    """The real transport, counting the requests by method."""

    def __init__(self):
        super().__init__()
        self.sent: list[str] = []

    async def handle_async_request(self, request):
        self.sent.append(request.method)
        return await super().handle_async_request(request)


def test_once_a_summary_is_written_each_append_is_one_request(live):
    transport = CountingTransport()

    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT, transport=transport) as client:
            store = ChartrSessionStore(client=client, namespace="one-request")
            await store.append(KEY, [{"type": "user", "uuid": "u1", "gitBranch": "main"}])
            first = list(transport.sent)
            for n in range(3):
                await store.append(KEY, [{"type": "custom-title", "customTitle": f"title {n}"}])
            after = transport.sent[len(first) :]
            other = ChartrSessionStore(client=client, namespace="one-request")  # knows no summary yet
            await other.append(KEY, [{"type": "user", "uuid": "u2", "gitBranch": "dev"}])
            return first, after, await other.list_session_summaries(KEY["project_key"])

    first, after, (summary,) = run(scenario())
    assert first == ["POST", "PUT"] and after == ["POST", "POST", "POST"]
    # The other writer's fold went on from the first one's: nothing of either was lost.
    assert summary["data"]["custom_title"] == "title 2" and summary["data"]["git_branch"] == "dev"
