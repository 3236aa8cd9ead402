"""The alternatives loop both completers share (``models/decoding/alternatives.py``)."""

from steerlsp.models.decoding.alternatives import DRAWS_PER_ALTERNATIVE, distinct_draws
from steerlsp.models.options import Sampling


def test_alternatives_are_distinct_non_empty_and_seeded_in_order():
    drawn: list[int | None] = []
    texts = {1: "a + b\n", 2: "a + b", 3: "  ", 4: "a - b", 5: "b"}

    def draw(sampling: Sampling) -> str | None:
        drawn.append(sampling.seed)
        return texts[sampling.seed or 0]

    found = distinct_draws("first", 2, draw, lambda: False)
    assert found == ("a + b\n", "a - b")  # "a + b" repeats after trailing space; "  " is empty
    assert drawn == [1, 2, 3, 4]
    assert all(s is not None and s > 0 for s in drawn)


def test_the_first_completion_is_not_an_alternative_and_draws_are_bounded():
    calls: list[Sampling] = []

    def draw(sampling: Sampling) -> str:
        calls.append(sampling)
        return "same "

    assert distinct_draws("same", 3, draw, lambda: False) == ()
    assert len(calls) == 3 * DRAWS_PER_ALTERNATIVE
    assert all(s.temperature > 0 for s in calls)


def test_a_draw_cut_off_by_time_ends_the_loop_and_none_starts_after_expiry():
    seeds: list[int | None] = []

    def cut(sampling: Sampling) -> str | None:
        seeds.append(sampling.seed)
        return "x" if sampling.seed == 1 else None

    assert distinct_draws("", 3, cut, lambda: False) == ("x",)
    assert seeds == [1, 2]
    assert distinct_draws("", 3, cut, lambda: True) == ()
