"""The analysis questions of one remote completion, within its caps.

Every stage of the remote steering (the member walk, the argument audit, the name
audit) asks through one :class:`Questions`, so that ``steering.maxQueries`` and
``steering.budgetMs`` bound the completion as a whole, and each question is traced
the same way."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import AnalysisError


@dataclass(frozen=True)
class Asked:
    """A question sent ahead, on a thread: its answer to come, and when it was sent."""

    future: Future[Any]
    sent: float


class Questions:
    """The completion's question count and time waited, against its caps; the trace's
    ``queries``."""

    def __init__(self, options: SteeringOptions, traced: list[dict[str, Any]]) -> None:
        self.options = options
        self.queries = 0
        self.waited = 0.0  # seconds spent waiting for answers and scoring
        self.traced = traced

    def open(self) -> bool:
        """Whether steering may still ask (the completion's caps)."""
        o = self.options
        return self.queries < o.max_queries_total and self.waited < o.budget_total

    def limit(self) -> float:
        """How long the next question may take: its own limit, within what is left."""
        o = self.options
        return min(o.query_timeout, max(o.budget_total - self.waited, 0.0))

    def spend(self, seconds: float) -> None:
        """Time steering spent on its own work (scoring), counted against the budget."""
        self.waited += seconds

    def ask(self, what: str, offset: int, question: Callable[[float], Any]) -> Any:
        """One question within its limit and the completion's budget; None past them."""
        limit = self.limit()
        if limit <= 0 or self.queries >= self.options.max_queries_total:
            return None
        self.queries += 1
        started = time.perf_counter()
        try:
            answer, outcome = question(limit), "answered"
        except AnalysisError as exc:
            answer, outcome = None, type(exc).__name__
        elapsed = time.perf_counter() - started
        self.waited += elapsed
        self._trace(what, offset, elapsed, outcome, len(answer) if isinstance(answer, list) else 0)
        return answer

    def send(self, question: Callable[[float], Any]) -> Asked:
        """A question asked now on a thread, its answer read later with :meth:`answer`."""
        limit = self.limit()
        self.queries += 1
        return Asked(pool().submit(question, limit), time.perf_counter())

    def answer(self, what: str, asked: Asked, offset: int) -> Any:
        """A question sent ahead, its answer waited for within the budget; None past it."""
        started = time.perf_counter()
        limit = max(self.options.budget_total - self.waited, 0.0)
        try:
            answer, outcome = asked.future.result(timeout=limit), "answered"
        except (AnalysisError, concurrent.futures.TimeoutError) as exc:
            answer, outcome = None, type(exc).__name__
        waited = time.perf_counter() - started
        self.waited += waited
        elapsed = time.perf_counter() - asked.sent
        self._trace(what, offset, elapsed, outcome, 1 if answer is not None else 0, waited)
        return answer

    def _trace(
        self,
        what: str,
        offset: int,
        elapsed: float,
        outcome: str,
        results: int,
        waited: float | None = None,
    ) -> None:
        """The trace's entry for one question; ``waited``: of a question sent ahead, how
        long its answer was waited for."""
        entry: dict[str, Any] = {"kind": what, "offset": offset, "ms": round(elapsed * 1000, 1)}
        if waited is not None:
            entry["waited_ms"] = round(waited * 1000, 1)
        self.traced.append(entry | {"outcome": outcome, "results": results})


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def pool() -> concurrent.futures.ThreadPoolExecutor:
    """The threads that questions sent ahead wait on (the analysis answers on its own
    loop), and the server's first-token request made while pylsp answers."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="steerlsp-remote")
        return _POOL
