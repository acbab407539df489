"""kernel.draining: one switch, flipped once, and every listener told exactly once."""

from __future__ import annotations

import pytest

from kernel import draining


@pytest.fixture(autouse=True)
def serving_again(monkeypatch):
    # This test's listeners go away with it; the live hub's (registered at start-up) stay.
    monkeypatch.setattr(draining, "_listeners", list(draining._listeners))
    draining.reset()
    yield
    draining.reset()


def test_listeners_hear_the_start_once_and_late_listeners_at_once():
    heard: list[str] = []

    def early():
        heard.append("early")

    draining.on_draining(early)
    draining.on_draining(early)  # registered twice: still told once
    assert not draining.is_draining() and heard == []

    assert draining.start_draining() is True
    assert draining.is_draining() and heard == ["early"]
    assert draining.start_draining() is False  # a second SIGTERM changes nothing
    assert heard == ["early"]

    draining.on_draining(lambda: heard.append("late"))
    assert heard == ["early", "late"]


def test_a_failing_listener_does_not_stop_the_others():
    heard: list[str] = []

    def broken():
        raise RuntimeError("boom")

    draining.on_draining(broken)
    draining.on_draining(lambda: heard.append("next"))
    assert draining.start_draining() is True
    assert heard == ["next"]
