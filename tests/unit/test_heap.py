"""The heap around a model load (``server/completion/heap.py``): settled after a load
so that full collections skip what the model keeps alive, released before the next
so that a replaced model's reference cycles can still be collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from steerlsp.server.completion import heap, loading
from steerlsp.server.config import Settings


class Node:
    """A container in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me: Any = self


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_settle_collects_the_garbage_then_freezes_what_lives() -> None:
    garbage, kept = Node(), Node()
    dropped = weakref.ref(garbage)
    del garbage
    heap.settle()
    assert dropped() is None  # collected before the freeze, not frozen with it
    assert gc.get_freeze_count() > 0

    # What was alive at the settle is skipped by every later collection, even once
    # it becomes garbage: that is what keeps a full collection short.
    frozen = weakref.ref(kept)
    del kept
    gc.collect()
    assert frozen() is not None

    # Released (before the next load), the model being replaced is collected whole.
    heap.release()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert frozen() is None


def test_pauses_are_counted_per_generation_from_the_settle() -> None:
    pauses = heap.pauses()
    gc.collect()
    heap.settle()
    assert pauses.status()["gen2"]["count"] == 0
    gc.collect()
    gc.collect(0)
    status = pauses.status()
    assert status["gen2"]["count"] == 1 and status["gen0"]["count"] >= 1
    assert status["gen2"]["longest_ms"] <= status["gen2"]["total_ms"]
    assert status["frozen"] == gc.get_freeze_count() > 0
    assert gc.callbacks.count(pauses.record) == 1
    heap.pauses()  # installed once however often it is asked for
    assert gc.callbacks.count(pauses.record) == 1


def test_a_load_releases_the_heap_first_and_settles_it_after(monkeypatch) -> None:
    before = Node()
    replaced = weakref.ref(before)
    heap.settle()  # an earlier load froze ``before``
    del before

    seen: dict[str, Any] = {}

    def load(settings: Settings, report: Any) -> Any:
        seen["frozen while loading"] = gc.get_freeze_count()
        gc.collect()
        seen["replaced collected while loading"] = replaced() is None
        return Node()

    monkeypatch.setattr(loading, "load_in_process", load)
    completer = loading.load_configured(Settings(), lambda message, percent: None)
    assert seen == {"frozen while loading": 0, "replaced collected while loading": True}
    assert gc.get_freeze_count() > 0
    loaded = weakref.ref(completer)
    del completer
    gc.collect()
    assert loaded() is not None  # frozen with the rest of the heap: collections skip it
