"""The transport for a single process: nothing crosses processes.

Committed rows still reach the streams of other processes through the hub's
poll; provisional updates stay in their process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from timeline.live.messages import Message
from timeline.live.transports.base import LiveTransport, PayloadReceiver


class LocalTransport(LiveTransport):
    name = "local"

    def start(
        self, loop: asyncio.AbstractEventLoop, *, receive: PayloadReceiver, on_connect: Callable[[], None]
    ) -> None:
        # Nothing to connect to: the hub hears everything it can hear at once.
        self.connected = asyncio.Event()
        self.connected.set()

    def publish(self, message: Message) -> None:
        pass

    async def aclose(self) -> None:
        pass
