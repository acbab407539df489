"""kernel.engines.for_engine: the one way code picks what differs per database engine."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernel.engines import UnsupportedEngine, for_engine

CHOICES = {"sqlite": "A", "postgresql": "B"}


@pytest.mark.parametrize(("vendor", "expected"), [("sqlite", "A"), ("postgresql", "B")])
def test_each_engine_gets_its_entry(vendor, expected):
    assert for_engine(SimpleNamespace(vendor=vendor), CHOICES) == expected


def test_an_engine_without_an_entry_gets_the_default():
    assert for_engine(SimpleNamespace(vendor="sqlite"), {"postgresql": "B"}, default=None) is None


def test_an_engine_without_an_entry_or_default_is_refused_with_the_callers_words():
    with pytest.raises(UnsupportedEngine, match=r"^Paging supports SQLite and PostgreSQL, not mysql\.$"):
        for_engine(SimpleNamespace(vendor="mysql"), CHOICES, unsupported="Paging supports")


def test_the_caller_chooses_the_error():
    with pytest.raises(LookupError, match="not oracle"):
        for_engine(SimpleNamespace(vendor="oracle"), CHOICES, error=LookupError)
