"""The heap trimmer: one trim per burst of closed streams, on glibc; nothing elsewhere or when off."""

from __future__ import annotations

import asyncio
import sys

import pytest

from timeline.live.heap import GlibcHeapTrimmer, HeapTrimmer, make_heap_trimmer

glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or type(make_heap_trimmer(delay=1)) is HeapTrimmer, reason="needs glibc"
)


def test_a_delay_of_zero_turns_the_trimmer_off():
    trimmer = make_heap_trimmer(delay=0)
    assert type(trimmer) is HeapTrimmer
    trimmer.streams_closed()
    trimmer.trim()


@glibc_only
def test_a_burst_of_closed_streams_costs_one_trim():
    trimmer = make_heap_trimmer(delay=0.05)
    assert isinstance(trimmer, GlibcHeapTrimmer)
    trims = []
    real_trim = trimmer.trim

    def counting_trim() -> None:
        real_trim()
        trims.append(1)

    trimmer.trim = counting_trim

    async def scenario() -> None:
        for _ in range(5):
            trimmer.streams_closed()
            await asyncio.sleep(0.01)
            assert trims == []  # each close puts the trim back
        await asyncio.sleep(0.3)
        assert len(trims) == 1
        trimmer.streams_closed()
        await asyncio.sleep(0.3)

    asyncio.run(scenario())
    assert len(trims) == 2


@glibc_only
def test_closing_outside_an_event_loop_schedules_nothing():
    trimmer = make_heap_trimmer(delay=0.05)
    trimmer.streams_closed()
    assert trimmer._pending is None
