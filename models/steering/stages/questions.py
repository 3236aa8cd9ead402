"""The questions out on the query pool, in the order they were asked.

Stages ask through :class:`Questions` at a trigger, so the language server's
latency overlaps the forward pass; the Steerer hands each answer, once due, to
the stage that asked (``Query.owner``), in the order asked.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from typing import Any

from steerlsp.models.steering.monitor import TriggerPoint
from steerlsp.models.steering.stages.base import Budget, Query, Stage, Trace
from steerlsp.models.steering.stages.written import Written

# (document text, offset, limit in seconds) -> the future answer
Submit = Callable[[str, int, float], concurrent.futures.Future[Any]]


class Questions:
    """Questions asked once per (kind, trigger offset), within the budget's cap."""

    def __init__(self, budget: Budget, trace: Trace, written: Written) -> None:
        self.budget = budget
        self.trace = trace
        self.written = written
        self.pending: list[Query] = []
        self._asked: set[tuple[str, int]] = set()

    def ask(self, kind: str, point: TriggerPoint, at: int, submit: Submit, owner: Stage) -> None:
        """Ask ``kind`` about the document as written up to monitor offset ``at``,
        unless it was asked there already, the cap is reached or the time spent."""
        key = (kind, at)
        if key in self._asked:
            return
        self._asked.add(key)
        offset = self.written.generated(at)
        trace = {"kind": point.trigger.value, "offset": offset, "query": kind}
        if point.partial:
            trace["partial"] = point.partial
        self.trace.triggers.append(trace)
        if self.budget.capped:
            whose = self.budget.whose_cap()
            self.trace.notes.append(f"{kind} at {offset}: query cap reached ({whose})")
            return
        if self.budget.spent:
            whose = self.budget.whose_time()
            self.trace.notes.append(f"{kind} at {offset}: time budget spent ({whose})")
            return
        self.budget.count_query()
        text, document_offset = self.written.speculative(at)
        # The budget and the question's own limit count from when the answer is due
        # (``Budget.wait``), not from now: a prefetched query has the forward pass (or
        # the prefill) for free.
        future = submit(text, document_offset, self.budget.ahead)
        at_point = self.written.generated(point.offset)
        self.pending.append(Query(kind, future, time.perf_counter(), point, at_point, owner))

    def take(self, query: Query) -> None:
        """``query`` is due: it is no longer pending."""
        self.pending.remove(query)

    def rewind(self, limit: int) -> None:
        """The text was written again from monitor offset ``limit``: questions about
        what came after it are void, and may be asked again."""
        for query in [q for q in self.pending if q.point.offset > limit]:
            query.future.cancel()
            self.pending.remove(query)
        self._asked = {(kind, at) for kind, at in self._asked if at <= limit}
