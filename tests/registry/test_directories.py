"""The schema's directory pattern states exactly the rule normalize_directory enforces."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.directories import DIRECTORY_PATTERN, MAX_DIRECTORY_LENGTH, MAX_SEGMENT_LENGTH, normalize_directory

paths = st.lists(st.sampled_from(["/", "//", ".", "..", "...", ".a", "..a", "a", "a.", "é", " "]), max_size=8).map(
    "".join
)


def accepted(raw: str) -> bool:
    try:
        normalize_directory(raw)
    except ValidationError:
        return False
    return True


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(paths)
def test_the_pattern_accepts_exactly_what_normalization_accepts(raw):
    assert (re.search(DIRECTORY_PATTERN, raw) is not None) == accepted(raw), raw


@pytest.mark.parametrize("raw", ["relative", "", "/a/./b", "/a/..", " /a"])
def test_refused_by_both(raw):
    assert re.search(DIRECTORY_PATTERN, raw) is None and not accepted(raw)


def test_the_length_limit_counts_what_was_sent():
    longest = ("/" + "a" * 127) * (MAX_DIRECTORY_LENGTH // 128)
    assert len(longest) == MAX_DIRECTORY_LENGTH and accepted(longest)
    assert not accepted("/" + longest)


@pytest.mark.parametrize("length", [MAX_SEGMENT_LENGTH, MAX_SEGMENT_LENGTH + 1])
@pytest.mark.parametrize("where", ["/{}", "/{}/b", "/a/{}", "/a/{}/"])
def test_a_segment_is_at_most_a_file_names_length_in_both(where, length):
    raw = where.format("é" * length)
    expected = length <= MAX_SEGMENT_LENGTH
    assert accepted(raw) is expected
    assert (re.search(DIRECTORY_PATTERN, raw) is not None) is expected
