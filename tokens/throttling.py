"""Per-token request throttling for /api/.

``CHARTR_API_THROTTLE_RATE`` is ``"<requests>/<period>"`` with period
``s``, ``m``, ``h`` or ``d`` (``"600/m"``, ``"20/second"``); empty turns
throttling off. Counting is a fixed window per token in Django's cache: one
increment per request, unlike DRF's sliding log, whose cost grows with the
rate. The default cache is per process, so with several workers each counts
on its own.
"""

from __future__ import annotations

import functools
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import BaseThrottle

from tokens.models import ApiToken

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@functools.lru_cache(maxsize=8)
def parse_rate(rate: str) -> tuple[int, int] | None:
    """``"600/m"`` → ``(600, 60)``; empty → None (throttling off)."""
    rate = (rate or "").strip()
    if not rate:
        return None
    count, _, period = rate.partition("/")
    try:
        requests = int(count)
        seconds = PERIODS[period.strip()[:1].lower()]
    except (ValueError, KeyError, IndexError):
        raise ImproperlyConfigured(
            f"CHARTR_API_THROTTLE_RATE={rate!r}: expected '<requests>/<s|m|h|d>', e.g. '600/m'."
        ) from None
    if requests < 1:
        raise ImproperlyConfigured(f"CHARTR_API_THROTTLE_RATE={rate!r}: requests must be at least 1.")
    return requests, seconds


CACHE_PREFIX = "chartr:api-throttle"


def throttle_wait(token: ApiToken) -> int | None:
    """None while ``token`` is within ``CHARTR_API_THROTTLE_RATE`` (one more request counted), else
    the whole seconds to wait until its window ends."""
    rate = parse_rate(getattr(settings, "CHARTR_API_THROTTLE_RATE", ""))
    if rate is None:
        return None
    requests, seconds = rate
    now = time.time()
    window = int(now // seconds)
    key = f"{CACHE_PREFIX}:{token.pk}:{seconds}:{window}"
    cache.add(key, 0, timeout=seconds + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, timeout=seconds + 1)
        count = 1
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
