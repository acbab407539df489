"""Open live streams, bounded per worker process and per token (docs/deploy.md#limits).

A stream holds no thread (chartr/asgi.py), but each holds a connection, a
subscription and a buffer: ``CHARTR_MAX_STREAMS`` bounds them in one worker
(one more is 503 ``stream_capacity``, which a load balancer may retry
elsewhere) and ``CHARTR_MAX_STREAMS_PER_TOKEN`` bounds one token's share of
them (one more is 429 ``too_many_streams``), so one client cannot take a
worker's every slot. Both answers carry ``Retry-After``.

A slot is taken once the token is checked and given back when the stream ends,
however it ends: its generator's ``finally`` and the handler's end of the
request (chartr/asgi.py) both release it, and releasing twice is harmless. The
counts live on the event loop of their worker, which is the only thread that
touches them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.conf import settings

from timeline.errors import StreamCapacity, TooManyStreams

#: Where the view leaves a request's slot for the handler to release (chartr/asgi.py).
REQUEST_ATTRIBUTE = "chartr_stream_slot"


class Slot:
    def __init__(self, slots: StreamSlots, owner: Any):
        self.slots = slots
        self.owner = owner
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.slots.give_back(self.owner)


class StreamSlots:
    def __init__(self) -> None:
        self.open = 0
        self.by_owner: Counter[Any] = Counter()

    def take(self, owner: Any = None) -> Slot:
        """A slot for one more stream of ``owner`` (a token's id; None: no per-owner bound), or the refusal."""
        if self.open >= settings.CHARTR_MAX_STREAMS:
            raise StreamCapacity(f"This server holds {settings.CHARTR_MAX_STREAMS} open streams already; retry.")
        per_owner = settings.CHARTR_MAX_STREAMS_PER_TOKEN
        if owner is not None and self.by_owner[owner] >= per_owner:
            raise TooManyStreams(f"This token has {per_owner} open streams on this server already.")
        self.open += 1
        if owner is not None:
            self.by_owner[owner] += 1
        return Slot(self, owner)

    def give_back(self, owner: Any) -> None:
        self.open -= 1
        if owner is not None:
            self.by_owner[owner] -= 1
            if self.by_owner[owner] <= 0:
                del self.by_owner[owner]


stream_slots = StreamSlots()


def release_request_slot(request: Any) -> None:
    """Give back the slot a stream's request took, if it took one (the handler calls it at the request's end)."""
    slot = getattr(request, REQUEST_ATTRIBUTE, None)
    if slot is not None:
        slot.release()
