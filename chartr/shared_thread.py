"""Short synchronous calls on asgiref's process-wide thread, many requests' calls to one hop.

``SharedThreadAsgiHandler`` (chartr/serving.py) runs each stream's
thread-sensitive steps (the ``request_started`` and ``request_finished``
signals, ``response.close``) on asgiref's one shared thread. Through
``sync_to_async`` each is a hop of its own there and back, and while the
event loop is busy every hop waits for the GIL: 10,000 streams ending at once
took 15–60 s to finish, one hop at a time. Here the calls queued while a hop is
under way go together in the next one. Each still runs on that same thread,
once per request and in the order they came, in a copy of its own request's
context, as ``sync_to_async`` would run it; its result or exception goes back
to its own caller.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

T = TypeVar("T")

_Call = tuple[contextvars.Context, Callable[[], Any], asyncio.Future]


def _run_each(calls: list[_Call]) -> list[tuple[BaseException | None, Any]]:
    outcomes: list[tuple[BaseException | None, Any]] = []
    for context, fn, _ in calls:
        try:
            outcomes.append((None, context.run(fn)))
        except Exception as exc:  # noqa: BLE001 - handed to the caller, as sync_to_async would raise it
            outcomes.append((exc, None))
    return outcomes


class SharedThreadCalls:
    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._drainer: asyncio.Task | None = None

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on asgiref's shared thread (``sync_to_async(fn)()``, thread-sensitive)."""
        loop = asyncio.get_running_loop()
        drainer = self._drainer
        if drainer is not None and drainer.get_loop() is not loop:
            # A new event loop (tests run one each): whatever the old one left is not coming back.
            self._calls, drainer = [], None
        future = loop.create_future()
        self._calls.append((contextvars.copy_context(), fn, future))
        if drainer is None or drainer.done():
            self._drainer = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._calls:
            calls, self._calls = self._calls, []
            try:
                outcomes = await sync_to_async(_run_each, thread_sensitive=True)(calls)
            except Exception as exc:  # noqa: BLE001 - the hop itself failed: every caller hears of it
                outcomes = [(exc, None)] * len(calls)
            except BaseException:
                for _, _, future in calls:
                    future.cancel()
                raise
            _settle(calls, outcomes)


def _settle(calls: list[_Call], outcomes: list[tuple[BaseException | None, Any]]) -> None:
    for (_, _, future), (error, value) in zip(calls, outcomes, strict=True):
        if future.done():  # its caller was cancelled meanwhile
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
