"""Per-token request throttling for /api/, counted across every worker and instance.

``CHARTR_API_THROTTLE_RATE`` is ``"<requests>/<period>"`` with period
``s``, ``m``, ``h`` or ``d`` (``"600/m"``, ``"20/second"``); empty turns
throttling off. Counting is a fixed window per token: one increment per
request (opening a live stream is one), in a store every process shares:

- ``RedisThrottleStore`` when ``CHARTR_REDIS_URL`` is set: ``INCR`` and
  ``EXPIRE`` on one key per token and window;
- ``DatabaseThrottleStore`` otherwise: one upsert of a ``ThrottleWindow`` row
  per request (``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``, which SQLite
  and PostgreSQL both run), in its own autocommit statement.

A store that cannot be reached lets the request through and logs a warning
(at most every ``WARN_EVERY_SECONDS``): a rate limit is not worth refusing
every call, and ``/readyz`` reports the store itself.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import threading
import time
from typing import Protocol

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from rest_framework.throttling import BaseThrottle

from tokens.models import ApiToken, ThrottleWindow

logger = logging.getLogger("tokens.throttling")

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
WARN_EVERY_SECONDS = 10.0


@functools.lru_cache(maxsize=8)
def parse_rate(rate: str) -> tuple[int, int] | None:
    """``"600/m"`` → ``(600, 60)``; empty → None (throttling off). Its form is checked when the
    settings load (``RATE`` in chartr/config.py): a period's first letter names it."""
    if not rate:
        return None
    count, _, period = rate.strip().partition("/")
    return int(count), PERIODS[period[0]]


class ThrottleStore(Protocol):
    def hit(self, token_id: int, period: int, window: int) -> int:
        """Count one request of ``token_id`` in ``window`` (of ``period`` seconds); the window's count so far."""


class DatabaseThrottleStore:
    """Counts in ``ThrottleWindow`` rows, on the database every instance shares."""

    def hit(self, token_id: int, period: int, window: int) -> int:
        table = connection.ops.quote_name(ThrottleWindow._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (token_id, period_seconds, window_index, hits) VALUES (%s, %s, %s, 1) "
                "ON CONFLICT (token_id, period_seconds, window_index) "
                f"DO UPDATE SET hits = {table}.hits + 1 RETURNING hits",
                [token_id, period, window],
            )
            hits = cursor.fetchone()[0]
        if hits == 1:
            # The token's first request in this window: its past windows count no more.
            ThrottleWindow.objects.filter(token_id=token_id, window_index__lt=window).delete()
        return hits


class RedisThrottleStore:
    """Counts in Redis (``CHARTR_REDIS_URL``), one key per token and window that expires with it."""

    def __init__(self, url: str):
        self.client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        # Deployments sharing one Redis keep apart, as the live channel does.
        database = settings.DATABASES["default"]
        identity = "|".join(str(database.get(key, "")) for key in ("ENGINE", "NAME", "HOST", "PORT"))
        self.prefix = "chartr:throttle:" + hashlib.sha256(identity.encode()).hexdigest()[:16]

    def hit(self, token_id: int, period: int, window: int) -> int:
        key = f"{self.prefix}:{token_id}:{period}:{window}"
        pipeline = self.client.pipeline()
        pipeline.incr(key)
        pipeline.expire(key, period + 1)
        hits, _ = pipeline.execute()
        return int(hits)


@functools.cache
def throttle_store() -> ThrottleStore:
    """The store the settings name: Redis when ``CHARTR_REDIS_URL`` is set, else the database."""
    url = settings.CHARTR_REDIS_URL
    return RedisThrottleStore(url) if url else DatabaseThrottleStore()


_last_warning = [0.0]
_warning_lock = threading.Lock()


def _warn_unreachable(error: Exception) -> None:
    with _warning_lock:
        now = time.monotonic()
        if now - _last_warning[0] < WARN_EVERY_SECONDS:
            return
        _last_warning[0] = now
    logger.warning("The throttle's store is unreachable; requests pass unthrottled meanwhile: %s", error)


def throttle_wait(token: ApiToken, *, store: ThrottleStore | None = None) -> int | None:
    """None while ``token`` is within ``CHARTR_API_THROTTLE_RATE`` (one more request counted), else
    the whole seconds to wait until its window ends."""
    rate = parse_rate(settings.CHARTR_API_THROTTLE_RATE)
    if rate is None:
        return None
    requests, seconds = rate
    now = time.time()
    window = int(now // seconds)
    try:
        count = (store or throttle_store()).hit(token.pk, seconds, window)
    except (DatabaseError, redis.RedisError) as error:
        _warn_unreachable(error)
        return None
    if count <= requests:
        return None
    return max(1, math.ceil((window + 1) * seconds - now))


class TokenRateThrottle(BaseThrottle):
    """DRF's throttle class for ``throttle_wait``."""

    def __init__(self):
        self._wait: int | None = None

    def allow_request(self, request, view) -> bool:
        if not isinstance(request.auth, ApiToken):
            return True
        self._wait = throttle_wait(request.auth)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
