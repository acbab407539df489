"""Append-to-delivery over the SSE stream: N subscribers on one agent, each append timed until
every subscriber has its row, next to the database's least work (commit, then one read each)."""

from __future__ import annotations

import asyncio
import time

from bench.common import Report, new_item
from bench.raw_store import RawStore
from tests.support.processes import Server

READ_LIMIT = 100

STREAM_UNAVAILABLE = "stream endpoint not available"


def stream_available(server: Server, token: str, agent_id: str) -> bool:
    import httpx

    url = f"{server.base_url}/api/v1/agents/{agent_id}/timeline/stream"
    try:
        with httpx.stream(
            "GET", url, headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}, timeout=5
        ) as response:
            return response.status_code == 200 and response.headers.get("content-type", "").startswith(
                "text/event-stream"
            )
    except httpx.HTTPError:
        return False


async def _subscribe(
    client, agent_id: str, after_seq: int, index: int, received: dict, connected: asyncio.Event, ready: list
):
    """Read one SSE stream, stamping the arrival of every committed seq."""
    url = f"/api/v1/agents/{agent_id}/timeline/stream"
    async with client.stream(
        "GET", url, params={"after_seq": after_seq}, headers={"Accept": "text/event-stream"}
    ) as response:
        if response.status_code != 200:
            raise RuntimeError(f"stream answered {response.status_code}")
        ready.append(index)
        if len(ready) == len(received):
            connected.set()
        event, event_id = "message", None
        async for line in response.aiter_lines():
            if line == "":
                if event == "committed" and event_id is not None:
                    received[index].setdefault(int(event_id), time.perf_counter())
                event, event_id = "message", None
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("id:"):
                event_id = line[3:].strip()


async def _delivery(server: Server, token: str, agent_id: str, subscribers: int, appends: int):
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=subscribers + 10, max_keepalive_connections=subscribers + 10)
    timeout = httpx.Timeout(30, read=None)
    received: dict[int, dict[int, float]] = {i: {} for i in range(subscribers)}
    connected = asyncio.Event()
    ready: list[int] = []
    async with (
        httpx.AsyncClient(base_url=server.base_url, headers=headers, limits=limits, timeout=timeout) as streams,
        httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as writer,
    ):
        head = (await writer.get(f"/api/v1/agents/{agent_id}/timeline", params={"limit": 1})).json()
        after_seq = head["window"]["next_seq"] - 1
        tasks = [
            asyncio.create_task(_subscribe(streams, agent_id, after_seq, i, received, connected, ready))
            for i in range(subscribers)
        ]
        try:
            await asyncio.wait_for(connected.wait(), timeout=60)

            async def append_and_wait(n: int) -> tuple[int, float]:
                started = time.perf_counter()
                response = await writer.post(
                    f"/api/v1/agents/{agent_id}/timeline", json={"items": [{"item": new_item(n)}]}
                )
                seq = response.json()["rows"][0]["seq"]
                deadline = started + 30
                while not all(seq in got for got in received.values()):
                    if time.perf_counter() > deadline:
                        raise RuntimeError(f"seq {seq} did not reach every subscriber within 30 s")
                    for task in tasks:
                        if task.done() and task.exception():
                            raise task.exception()
                    await asyncio.sleep(0.001)
                return seq, started

            # The first append also proves every subscription is live.
            await append_and_wait(-1)
            each_ms: list[float] = []
            last_ms: list[float] = []
            for n in range(appends):
                seq, started = await append_and_wait(n)
                arrivals = [(got[seq] - started) * 1000 for got in received.values()]
                each_ms.extend(arrivals)
                last_ms.append(max(arrivals))
            return each_ms, last_ms
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def bench_delivery(report: Report, raw: RawStore, server: Server, token: str, subscribers: int, appends: int) -> None:
    case = f"delivery {subscribers} subscribers"
    if not stream_available(server, token, "bench-delivery"):
        report.skip(case, STREAM_UNAVAILABLE)
        return
    each_ms, last_ms = asyncio.run(_delivery(server, token, "bench-delivery", subscribers, appends))

    # What the database must do at the least: commit the row, then each
    # subscriber reads the rows after its cursor. "each" is one subscriber's
    # share (commit + one read), "last" is all of them (commit + N reads).
    raw_each_ms, raw_last_ms = [], []
    for _ in range(max(appends, 5)):
        head = raw.head("raw-delivery")
        started = time.perf_counter_ns()
        raw.append("raw-delivery", [new_item(head)])
        raw.read("raw-delivery", "after", head, READ_LIMIT)
        raw_each_ms.append((time.perf_counter_ns() - started) / 1e6)
        for _ in range(subscribers - 1):
            raw.read("raw-delivery", "after", head, READ_LIMIT)
        raw_last_ms.append((time.perf_counter_ns() - started) / 1e6)
    report.latency(f"{case} (each)", each_ms, raw_each_ms, note="raw = commit + 1 read")
    report.latency(
        f"{case} (last)", last_ms, raw_last_ms, note=f"until all have it; raw = commit + {subscribers} reads"
    )
