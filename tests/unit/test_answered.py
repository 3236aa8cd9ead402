"""The record of answered ids: exact for a session of any length, compact for counted ids."""

from __future__ import annotations

import random

import pytest

from steerlsp.server.lsp.answered import AnsweredIds


def test_counted_ids_are_one_range_however_many():
    ids = AnsweredIds()
    for n in range(1, 200_001):
        ids.add(n)
    assert len(ids) == 1
    assert 1 in ids and 200_000 in ids and 150_000 in ids
    assert 0 not in ids and 200_001 not in ids


def test_random_ints_and_strings_match_a_plain_set():
    rng = random.Random(7)
    ids, reference = AnsweredIds(), set()
    for _ in range(5000):
        value = rng.choice([rng.randrange(-50, 400), f"s{rng.randrange(300)}"])
        ids.add(value)
        reference.add(value)
    for probe in [*range(-60, 420), *(f"s{n}" for n in range(320))]:
        assert (probe in ids) == (probe in reference), probe


def test_ranges_merge_from_both_sides():
    ids = AnsweredIds()
    for value in (5, 7, 6, 1, 3, 2, 4):
        ids.add(value)
    assert len(ids) == 1
    assert all(n in ids for n in range(1, 8))


@pytest.mark.parametrize("odd", [True, False, None, 1.0, [1], {"a": 1}])
def test_ids_that_are_not_ids_are_never_in(odd):
    ids = AnsweredIds()
    ids.add(1)
    ids.add(0)
    assert odd not in ids


def test_past_the_limit_the_oldest_are_forgotten():
    ids = AnsweredIds(limit=3)
    for value in (10, 20, 30, "a", "b"):
        ids.add(value)
    assert len(ids) == 3
    assert "b" in ids


def test_the_limit_is_validated():
    with pytest.raises(ValueError, match="0"):
        AnsweredIds(limit=0)
