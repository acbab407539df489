"""Which transactions the write fence lets through without asking.

While a data restore holds the write fence (kernel/db_backends/fence.py),
every transaction a connection begins waits for it, then fails with
UnderMaintenance. Two kinds of transaction must not wait: the restore's own
(it holds the fence) and ones that store nothing (a NOTIFY that follows a
committed write). They run inside ``outside_write_fence()``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_state = threading.local()


class FenceNotClosed(Exception):
    """A restore could not close the fence: transactions admitted earlier were still running."""


@contextmanager
def outside_write_fence() -> Iterator[None]:
    """Transactions this thread begins inside the block are not held back by the write fence."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def is_outside_write_fence() -> bool:
    return getattr(_state, "depth", 0) > 0
