"""When a request is sent again, and after how long.

A request is retried only when sending it again cannot do anything twice:

- a **503** ``busy``, ``maintenance`` or ``shutting_down`` and a **429** ``throttled`` wrote nothing:
  every request is retried, after ``Retry-After`` (capped at ``max_retry_after``) or the backoff,
  whichever is longer;
- a **connection that could not be opened** sent nothing: every request is retried;
- a **503** ``database_unavailable`` (the database refused or lost the connection, perhaps at the
  commit) may have done it: retried like a broken connection, below, after ``Retry-After``;
- a **connection that broke** after the request went out may have done it: only requests that
  repeat safely are retried (reads, appends, whose items all carry an ``item_id``, creates, which
  carry an ``Idempotency-Key``, archive, unarchive, heartbeat, provisional updates). A PATCH is not:
  its first attempt may have moved the version its ``If-Match`` names.

At most ``max_attempts`` attempts in all; then the last error is raised.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from chartr_client.errors import ApiError

#: Refusals that wrote nothing and say to come back.
RETRY_CODES = frozenset({"busy", "maintenance", "shutting_down", "throttled"})
#: The database refused or lost the connection: a write may have committed before the answer was lost.
MAYBE_DONE_CODES = frozenset({"database_unavailable"})
#: Transport errors raised before anything was sent.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 8
    initial_backoff: float = 0.25
    max_backoff: float = 4.0
    max_retry_after: float = 30.0

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based): doubling from ``initial_backoff``."""
        return min(self.initial_backoff * 2.0 ** (attempt - 1), self.max_backoff)

    def after_transport_error(self, exc: httpx.TransportError, *, repeats_safely: bool, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if attempt >= self.max_attempts:
            return None
        if repeats_safely or isinstance(exc, NOT_SENT):
            return self.backoff(attempt)
        return None

    def after_error(self, error: ApiError, *, attempt: int, repeats_safely: bool = False) -> float | None:
        if attempt >= self.max_attempts:
            return None
        if error.code in RETRY_CODES or (repeats_safely and error.code in MAYBE_DONE_CODES):
            return self.wait(error, attempt)
        return None

    def wait(self, error: ApiError, attempt: int) -> float:
        """The backoff, or the server's ``Retry-After`` when it asks for longer (capped)."""
        asked = min(error.retry_after, self.max_retry_after) if error.retry_after is not None else 0.0
        return max(self.backoff(attempt), asked)


#: One attempt, never a retry.
NO_RETRY = RetryPolicy(max_attempts=1)


@dataclass(frozen=True)
class ReconnectPolicy:
    """How ``follow()`` reconnects: after a broken or ended stream, a 503 (``Retry-After`` honoured),
    or a 502/504 from a proxy, with a doubling delay; it gives up (raising the last error) once it
    has failed to get a stream for ``give_up_after`` seconds in a row. A stream that opens resets it."""

    initial_delay: float = 0.25
    max_delay: float = 5.0
    give_up_after: float = 120.0
    max_retry_after: float = 30.0

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        backoff = min(self.initial_delay * 2.0 ** max(failures - 1, 0), self.max_delay)
        if retry_after is not None:
            return max(backoff, min(retry_after, self.max_retry_after))
        return backoff
