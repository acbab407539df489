"""Handing the memory of closed streams back to the operating system.

A thousand open streams take about 40 MiB of small objects. Once they close
the objects are freed, but the C allocator keeps the pages for reuse, so the
worker's RSS stays where it peaked. On glibc, ``malloc_trim(0)`` gives every
free page back. It only reaches what glibc itself allocated: Python's own
small-object allocator keeps its 1 MiB arenas as long as one object in them
lives, so the pages come back when the interpreter allocates through glibc
(``PYTHONMALLOC=malloc``, which ``bin/chartr-entrypoint`` sets; see
docs/configuration.md). Elsewhere (musl, macOS) the trimmer does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import sys

logger = logging.getLogger("chartr.live")


class HeapTrimmer:
    """Does nothing: the interface, for platforms without ``malloc_trim``."""

    def streams_closed(self) -> None:
        """A stream's request is over, its objects freed (event-loop side)."""

    def trim(self) -> None:
        """Give free heap pages back now (blocking)."""


class GlibcHeapTrimmer(HeapTrimmer):
    """``malloc_trim(0)`` on a worker thread once streams stopped closing for ``delay`` seconds.

    Every close pushes the trim back, so a burst of closes (a thousand
    clients leaving over a few seconds) costs one trim, after the last of
    them: a trim in the middle of the burst finds most of the memory still in
    use. Under steady churn it still runs every ``MAX_WAIT_PERIODS × delay``.
    The trim walks the whole heap (tens of milliseconds), so never on the event loop.
    """

    MAX_WAIT_PERIODS = 5

    def __init__(self, libc: ctypes.CDLL, *, delay: float):
        self._malloc_trim = libc.malloc_trim
        self._malloc_trim.argtypes = [ctypes.c_size_t]
        self._malloc_trim.restype = ctypes.c_int
        self.delay = delay
        self._pending: asyncio.TimerHandle | None = None
        self._first_close = 0.0

    def streams_closed(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # closed outside the event loop (tests): nothing to batch with
            return
        now = loop.time()
        if self._pending is None:
            self._first_close = now
        elif now - self._first_close < self.MAX_WAIT_PERIODS * self.delay:
            self._pending.cancel()
        else:
            return
        self._pending = loop.call_later(self.delay, self._trim_soon)

    def _trim_soon(self) -> None:
        self._pending = None
        future = asyncio.get_running_loop().run_in_executor(None, self.trim)
        future.add_done_callback(_log_failure)

    def trim(self) -> None:
        self._malloc_trim(0)


def _log_failure(future: asyncio.Future) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.warning("malloc_trim failed", exc_info=future.exception())


def make_heap_trimmer(*, delay: float) -> HeapTrimmer:
    """The glibc trimmer where glibc is the C library and ``delay`` is positive, else the no-op."""
    if delay <= 0 or not sys.platform.startswith("linux"):
        return HeapTrimmer()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only; musl has no malloc_trim either
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError, TypeError):
        return HeapTrimmer()
    return GlibcHeapTrimmer(libc, delay=delay)
