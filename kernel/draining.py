"""Whether this process is shutting down, and who must hear about it the moment it starts.

The server's worker (``chartr/workers.py``) calls :func:`start_draining` when
SIGTERM arrives, before it stops accepting connections. From then on the
readiness probe fails, so a load balancer takes the instance out, and every
listener registered with :func:`on_draining` runs once: the live hub ends its
open streams cleanly, so their clients reconnect (through the balancer, to
another instance) with ``Last-Event-ID``.

It lives in ``kernel`` because the server configuration sets it and an app
(the live stream) reacts to it, and neither may import the other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger("chartr.draining")

_draining = threading.Event()
_listeners: list[Callable[[], None]] = []
_lock = threading.Lock()


def is_draining() -> bool:
    return _draining.is_set()


def on_draining(listener: Callable[[], None]) -> None:
    """Call ``listener()`` once draining starts; at once if it already has. Registering twice is a no-op."""
    with _lock:
        if listener not in _listeners:
            _listeners.append(listener)
        started = _draining.is_set()
    if started:
        _notify(listener)


def start_draining() -> bool:
    """Start draining; True the first time, False if it had already started.

    Listeners must not block: this runs inside a signal handler.
    """
    with _lock:
        if _draining.is_set():
            return False
        _draining.set()
        listeners = list(_listeners)
    for listener in listeners:
        _notify(listener)
    return True


def _notify(listener: Callable[[], None]) -> None:
    try:
        listener()
    except Exception:
        logger.exception("A draining listener failed")


def reset() -> None:
    """Back to serving (tests only: a real process never comes back from draining)."""
    _draining.clear()
