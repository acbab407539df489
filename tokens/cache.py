"""A per-process cache of active API tokens, keyed by the token's SHA-256.

Looking a token up was a query on every API request (15-17% of a request's
CPU in a profile). An active token found once is reused for
``CHARTR_TOKEN_CACHE_SECONDS``; so a token revoked through another process is
still honoured here for at most that long. Revoking, editing or deleting a
token in this process forgets the cache at once (``tokens.apps``). Unknown and
revoked tokens are never cached, and a cached token is dropped at its expiry: a token created elsewhere works at once, and
a flood of bad tokens cannot fill memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.conf import settings

from tokens.models import ApiToken

#: Cached tokens per process; past this the cache starts over (far above any real fleet's tokens).
MAX_ENTRIES = 4096


class TokenCache:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._entries: dict[str, tuple[float, ApiToken]] = {}
        self._lock = threading.Lock()

    def active_token(self, token_hash: str, *, fresh: bool = False) -> ApiToken | None:
        """The active token with this hash, from the cache while fresh, else (or with ``fresh``:
        the live stream's open, which holds the token for long) from the database."""
        lifetime = settings.CHARTR_TOKEN_CACHE_SECONDS
        now = self.clock()
        entry = self._entries.get(token_hash)
        if entry is not None and entry[0] > now and not fresh and not entry[1].is_expired:
            return entry[1]
        # Sliced, not .first(): the hash is unique, and .first() would add an ORDER BY.
        found = list(ApiToken.objects.authenticating().filter(token_hash=token_hash).order_by()[:1])
        token = found[0] if found else None
        with self._lock:
            if token is None or lifetime <= 0:
                self._entries.pop(token_hash, None)
            else:
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
                self._entries[token_hash] = (now + lifetime, token)
        return token

    def forget(self, token_hash: str | None = None) -> None:
        """Drop one token (by hash), or everything."""
        with self._lock:
            if token_hash is None:
                self._entries.clear()
            else:
                self._entries.pop(token_hash, None)

    def __contains__(self, token_hash: str) -> bool:
        return token_hash in self._entries


token_cache = TokenCache()
