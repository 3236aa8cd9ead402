import bisect
from contextlib import ExitStack
from unittest.mock import patch

from candidate import Job, enqueue


def test_output_middle_and_ends():
    queue = [Job("a", 1), Job("b", 5), Job("c", 9)]
    enqueue(queue, Job("x", 6))
    enqueue(queue, Job("first", 0))
    enqueue(queue, Job("last", 10))
    assert [j.name for j in queue] == ["first", "a", "b", "x", "c", "last"]


def test_output_after_equal_priorities():
    queue = [Job("a", 1), Job("b", 2), Job("c", 2), Job("d", 3)]
    assert enqueue(queue, Job("new", 2)) is None
    assert [j.name for j in queue] == ["a", "b", "c", "new", "d"]


def test_output_empty_queue():
    queue = []
    enqueue(queue, Job("only", 4))
    assert queue == [Job("only", 4)]


def test_approach_uses_bisect_with_key():
    names = ["insort", "insort_right", "insort_left", "bisect", "bisect_right", "bisect_left"]
    with ExitStack() as stack:
        spies = [
            stack.enter_context(patch.object(bisect, n, wraps=getattr(bisect, n))) for n in names
        ]
        queue = [Job("a", 1), Job("b", 3)]
        enqueue(queue, Job("x", 2))
    assert [j.name for j in queue] == ["a", "x", "b"]
    assert any(
        call.kwargs.get("key") is not None for spy in spies for call in spy.call_args_list
    ), "expected a bisect function called with key="
