"""The process's heap around a model load: what a garbage collection costs once the
model is in memory, and keeping that cost out of completions.

Loading a model leaves some 400,000 container objects (torch, transformers, the
tokenizer's tables, steering's vocabulary tables) that live as long as the model.
Python's cyclic collector scans every one of them in each full collection, which
costs 0.2-0.3 s on a 2-core machine, and such a collection starts in whichever
thread allocates at that moment: the decode loop in the middle of a completion, or
the event loop while it forwards a keystroke. After a load the heap is *settled*:
collected once, then frozen (``gc.freeze``), so later collections scan only what
was allocated since. Before the next load it is *released* (``gc.unfreeze``), so
the model being replaced can be collected whole.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Pauses", "pauses", "release", "settle", "settled"]

T = TypeVar("T")


@dataclass
class _Generation:
    count: int = 0
    total_ms: float = 0.0
    longest_ms: float = 0.0

    def add(self, ms: float) -> None:
        self.count += 1
        self.total_ms += ms
        self.longest_ms = max(self.longest_ms, ms)


def _three() -> list[_Generation]:
    return [_Generation() for _ in range(3)]


@dataclass
class Pauses:
    """The collector's pauses since the heap was last settled, per generation;
    ``record`` is a ``gc.callbacks`` entry."""

    generations: list[_Generation] = field(default_factory=_three)
    _started: float | None = None  # collections never overlap (one at a time, GIL held)

    def record(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._started = now
            return
        started, self._started = self._started, None
        generation = info.get("generation")
        if started is not None and generation in (0, 1, 2):
            self.generations[generation].add((now - started) * 1000)

    def reset(self) -> None:
        self.generations = _three()

    def status(self) -> dict[str, Any]:
        """For ``steerlsp/status``: the frozen objects, and per generation the
        collections since the last settle, their total and longest pause in ms."""
        return {
            "frozen": gc.get_freeze_count(),
            **{
                f"gen{index}": {
                    "count": generation.count,
                    "total_ms": round(generation.total_ms, 1),
                    "longest_ms": round(generation.longest_ms, 1),
                }
                for index, generation in enumerate(self.generations)
            },
        }


_pauses = Pauses()
_installed = threading.Lock()


def pauses() -> Pauses:
    """The process's one record of collector pauses, installed on first use."""
    with _installed:
        if _pauses.record not in gc.callbacks:
            gc.callbacks.append(_pauses.record)
    return _pauses


def release() -> None:
    """Before a load: what an earlier settle froze can be collected again (a model
    being replaced may hold reference cycles)."""
    gc.unfreeze()


def settle() -> None:
    """After a load: collect what loading left behind, then freeze the rest, so that
    later collections skip it. Pauses are counted from here."""
    gc.collect()
    gc.freeze()
    pauses().reset()


def settled(loaded: T) -> T:
    """``loaded``, once the heap is settled around it (a load outside
    ``load_configured``: the in-process fallback of a remote model)."""
    settle()
    return loaded
