"""Helpers for the in-process live tests: a fresh hub per event loop, and an SSE reader.

Each test runs its own event loop (``asyncio.run``) with a fresh hub; the
database work happens on the hub's threads, so the tests that touch the
database are transaction=True tests.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from django.db import connections

from timeline.live import hub as live_hub
from timeline.live.hub import Hub
from timeline.live.stream import TimelineStream
from timeline.services import NewTimelineItem, append_timeline_items

db = pytest.mark.django_db(transaction=True)


def append(agent_id: str, *texts: str):
    return append_timeline_items(
        agent_id=agent_id, items=[NewTimelineItem(item={"type": "user_message", "text": t}) for t in texts]
    )


async def in_thread(fn, *args, **kwargs):
    """Run blocking ORM work on a worker thread, closing that thread's connection after
    (PostgreSQL will not drop the test database while a session is left open)."""

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    return await asyncio.to_thread(call)


def parse(frame: bytes) -> tuple[str, dict | None, str | None]:
    """(event, data, id) of one SSE frame; comments give ("comment", None, None)."""
    text = frame.decode()
    if text.startswith(":"):
        return "comment", None, None
    lines = [line for line in text.strip().split("\n") if not line.startswith("retry:")]
    if not lines:
        return "retry", None, None
    fields = dict(line.split(": ", 1) for line in lines)
    return fields["event"], json.loads(fields["data"]), fields.get("id")


class Reader:
    """Pulls parsed events from a stream generator, each with a time limit."""

    def __init__(self, stream: TimelineStream):
        self.events = stream.events()

    async def next(self, *, timeout: float = 5, skip_comments: bool = True):
        while True:
            event = parse(await asyncio.wait_for(self.events.__anext__(), timeout))
            if event[0] == "retry" or (skip_comments and event[0] == "comment"):
                continue
            return event

    async def committed_seqs(self, count: int) -> list[int]:
        seqs = []
        while len(seqs) < count:
            kind, data, event_id = await self.next()
            if kind == "committed":
                assert event_id == str(data["seq"])
                seqs.append(data["seq"])
        return seqs

    async def nothing_but_keepalive(self) -> None:
        kind, _, _ = await self.next(skip_comments=False)
        assert kind == "comment"

    async def close(self):
        await self.events.aclose()


def run(coro_fn, **hub_kwargs):
    """Run ``coro_fn(hub)`` on a fresh hub that is also the process-wide one (so signals reach it)."""

    async def main():
        hub = Hub(transport=hub_kwargs.pop("transport", "local"), **hub_kwargs)
        previous = live_hub.set_hub(hub)
        try:
            return await asyncio.wait_for(coro_fn(hub), 30)
        finally:
            live_hub.set_hub(previous)
            await hub.aclose()

    return asyncio.run(main())
