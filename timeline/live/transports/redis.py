"""Redis pub/sub (when ``CHARTR_REDIS_URL`` is set): one channel for every message."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import redis
import redis.asyncio as aioredis
from django.conf import settings

from timeline.live.messages import Message, encode_message
from timeline.live.transports.base import ListeningTransport, PayloadReceiver


class RedisTransport(ListeningTransport):
    name = "redis"
    lost_message = "Live Redis subscription lost; reconnecting; streams fall back to the database poll meanwhile"
    unreachable_reason = "redis_unreachable"
    #: After a failed publish, later ones skip Redis this long.
    DOWN_SECONDS = 5

    def __init__(self, *, channel_name: str, origin: str):
        super().__init__(channel_name=channel_name, origin=origin)
        self._client: redis.Redis | None = None
        self._client_lock = threading.Lock()
        self._down_until = 0.0

    def publish(self, message: Message) -> None:
        # While Redis is unreachable, skip it for a few seconds instead of making
        # every append wait for a connect timeout; the poll still delivers rows.
        if time.monotonic() < self._down_until:
            return
        try:
            self._sync_client().publish(self.channel_name, encode_message(message, self.origin))
        except Exception:
            self._down_until = time.monotonic() + self.DOWN_SECONDS
            raise

    def _sync_client(self) -> redis.Redis:
        with self._client_lock:
            if self._client is None:
                self._client = redis.Redis.from_url(
                    settings.CHARTR_REDIS_URL, socket_timeout=2, socket_connect_timeout=2
                )
            return self._client

    def readiness_problem(self) -> str | None:
        """Redis must answer a PING, whether or not a stream has opened the listener yet."""
        if self.listener_lost():
            return self.unreachable_reason
        try:
            self._sync_client().ping()
        except redis.RedisError:
            return self.unreachable_reason
        return None

    async def listen_once(self, receive: PayloadReceiver, subscribed: Callable[[], None]) -> None:
        client = aioredis.from_url(settings.CHARTR_REDIS_URL, socket_connect_timeout=2)
        try:
            async with client.pubsub() as pubsub:
                await pubsub.subscribe(self.channel_name)
                subscribed()
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=30)
                    if message is not None and message.get("type") == "message":
                        receive(message["data"])
        finally:
            try:
                await client.aclose()
            except Exception:
                pass
