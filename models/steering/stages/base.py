"""What every steering stage is given and keeps: the contract between stages and the Steerer.

A stage is one kind of knowledge brought to the decoder (the walk after ``.``,
signature hints, undefined names). It owns its state and its trace entries,
answers :meth:`Stage.rewind` itself, and receives what it uses as explicit
inputs (:class:`Inputs`): the analysis, the shared facts (vocabulary index,
query pool), its options, the one :class:`Budget`, and at each step the KV
cache and the scorer through :class:`CacheView` and :class:`ScorerView`, never
the engine itself. The Steerer (``models/steering/steerer.py``) only orders the
stages, holds the budget and collects the :class:`Trace`.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import (
    Analysis,
    AnalysisError,
    CompletionCandidate,
    DefinitionSource,
    Signature,
)
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.monitor import TriggerPoint

if TYPE_CHECKING:
    from steerlsp.models.steering.stages.hints import Hints
    from steerlsp.models.steering.stages.questions import Questions
    from steerlsp.models.steering.stages.walking import Walking
    from steerlsp.models.steering.stages.written import Written

log = logging.getLogger(__name__)

# How long a question may wait, on its pool thread, to be due: the questions the
# cursor implies are asked before the prefill, which takes 3 to 7.5 s for a
# 1,000-token prompt on two busy slow cores (``bench/steering_latency.py``, just
# opened). Counting their limit from the asking timed Jedi's first list out during
# the prefill on such a machine, so whether a name was steered depended on the load.
ASKED_AHEAD = 10.0


# Where the listed items' classes are defined (group -> path, 0-based line), and its future.
Definitions: TypeAlias = dict[str, tuple[str, int | None]]
Files: TypeAlias = concurrent.futures.Future[Definitions]
# What a question's answer is: the completion items (with the future of their classes'
# files), a signature, a definition, the definitions of groups, or nothing known.
Answer: TypeAlias = (
    tuple[list[CompletionCandidate], Files | None]
    | Signature
    | DefinitionSource
    | Definitions
    | None
)


class CacheView(Protocol):
    """The KV cache as stages edit it (``Engine.cache``)."""

    @property
    def cached(self) -> list[int]:
        """The tokens the cache holds, hints included (read-only by convention)."""
        ...

    def splice(self, at: int, remove: int, insert: Sequence[int]) -> torch.Tensor:
        """Replace ``remove`` cached tokens at ``at`` with ``insert``. -> logits [1, V]"""
        ...

    def rewind(self, drop: int) -> torch.Tensor:
        """Forget the last ``drop`` cached tokens. -> logits [1, V]"""
        ...


class ScorerView(Protocol):
    """What scores candidate names on the cache (``Engine.scorer``)."""

    def score_continuations(
        self, logits: torch.Tensor, sequences: Sequence[Sequence[int]], ends: torch.Tensor
    ) -> list[float]:
        """Log-probability of each token sequence after the cached ones, then an end."""
        ...


class Decoder(Protocol):
    """What ``Steerer.steer`` is given: the two faces of the engine stages may use."""

    @property
    def cache(self) -> CacheView: ...

    @property
    def scorer(self) -> ScorerView: ...


@dataclass(frozen=True)
class Step:
    """One decode step as stages see it: the tokens so far, the cache and the scorer."""

    history: torch.Tensor  # [1, T] prompt + generated
    cache: CacheView
    scorer: ScorerView


@dataclass
class Trace:
    """What steered one completion: ``steerlsp/explain``'s answer."""

    triggers: list[dict[str, Any]] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)
    rankings: list[dict[str, Any]] = field(default_factory=list)
    walks: list[dict[str, Any]] = field(default_factory=list)
    hints: list[dict[str, Any]] = field(default_factory=list)
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The names the document imports and does not use, which operands were steered toward.
    unused_imports: list[str] = field(default_factory=list)
    waited_ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Query:
    """A question out on the query pool, and the stage that answers it when due."""

    kind: str  # "completions" | "signature" | "definition" | "definitions"
    future: concurrent.futures.Future[Any]  # of an Answer (the pool's are of each kind)
    started: float
    point: TriggerPoint
    at: int  # the trigger's offset in the generated text (for the trace)
    owner: Stage | None = None  # None: waited for by the stage that asked, in place
    extra: Any = None
    answered: float | None = field(default=None, init=False)  # when the future finished

    def __post_init__(self) -> None:
        self.future.add_done_callback(self._finished)

    def _finished(self, _: concurrent.futures.Future[Any]) -> None:
        self.answered = time.perf_counter()


class Budget:
    """The budgets of a completion: per generated line, the query cap and the time
    waited for answers, both also capped over the whole completion; and each query's
    own limit on its pool thread."""

    def __init__(self, options: SteeringOptions, trace: Trace) -> None:
        self.options = options
        self.trace = trace
        self.queries = 0  # over the completion
        self.waited = 0.0
        self.line = 0  # the generated line being written (0: the cursor's)
        self.line_queries = 0
        self.line_waited = 0.0
        # A question's own limit, counted from when it is due (``wait``): what the
        # decode loop stands still for. On its pool thread a question may have waited
        # before that for as long as the forward passes (or the prefill) it was asked
        # ahead of took, so there it has ``ahead`` more: the time it waits unread must
        # not decide whether it is answered.
        self.limit = options.query_timeout
        self.ahead = options.query_timeout + ASKED_AHEAD

    def at_line(self, line: int) -> None:
        """The text written so far ends on generated line ``line``: a new line (or one
        written again after a rewind) starts with its budgets whole."""
        if line != self.line:
            self.line, self.line_queries, self.line_waited = line, 0, 0.0

    @property
    def capped(self) -> bool:
        """No query may be asked any more (on this line, or at all)."""
        o = self.options
        return self.line_queries >= o.max_queries or self.queries >= o.max_queries_total

    @property
    def spent(self) -> bool:
        """The time budget is spent (this line's, or the completion's)."""
        return self.left() <= 0

    def count_query(self) -> None:
        self.queries += 1
        self.line_queries += 1

    def whose_cap(self) -> str:
        """Which query cap is reached: the completion's, or else the line's (for traces)."""
        return "completion" if self.queries >= self.options.max_queries_total else "line"

    def whose_time(self) -> str:
        """Which time budget is spent: the completion's, or else the line's (for traces)."""
        return "completion" if self.waited >= self.options.budget_total else "line"

    def left(self) -> float:
        """What the next wait may take: the rest of the line's budget, within the rest
        of the completion's. A due answer is waited for, not raced past: the completion
        of a document version is then the same whatever the machine's load, as long as
        the answers come within the budgets (and each within its own limit, ``limit``)."""
        o = self.options
        return max(0.0, min(o.budget - self.line_waited, o.budget_total - self.waited))

    def _patience(self) -> float:
        """How long the loop may stand still for an answer due now: ``left()``, within
        the question's own limit."""
        return min(self.left(), self.limit)

    def spend(self, seconds: float) -> None:
        """Time the completion spent steering but not waiting (a hint's splice)."""
        self.waited += seconds
        self.line_waited += seconds

    def block(self, seconds: float) -> None:
        """Time the decode loop stood still waiting for an answer."""
        self.waited += seconds
        self.line_waited += seconds
        self.trace.waited_ms = round(self.waited * 1000, 2)

    def wait_for(self, future: concurrent.futures.Future[Any]) -> None:
        """Wait for ``future`` within :meth:`left` and ``limit``, without reading it."""
        started = time.perf_counter()
        concurrent.futures.wait([future], timeout=self._patience())
        self.block(time.perf_counter() - started)

    def wait(self, query: Query) -> Answer:
        """The query's answer within :meth:`left` and ``limit``; None on a timeout or
        error. Traced."""
        left = self._patience()
        waited_from = time.perf_counter()
        entry: dict[str, Any] = {"query": query.kind, "offset": query.at}
        try:
            answer = query.future.result(timeout=left)
            entry["outcome"] = "ok"
        except concurrent.futures.TimeoutError:
            query.future.cancel()
            answer, entry["outcome"] = None, "timeout"
        except AnalysisError as exc:
            answer, entry["outcome"] = None, "timeout" if "took over" in str(exc) else "error"
            entry["error"] = str(exc)[:200]
        except Exception as exc:  # a broken analysis must not break the completion
            log.warning("steering query failed: %s", exc)
            answer, entry["outcome"] = None, "error"
            entry["error"] = f"{type(exc).__name__}: {exc}"[:200]
        now = time.perf_counter()
        blocked = now - waited_from
        self.block(blocked)
        entry["latency_ms"] = round((now - query.started) * 1000, 2)
        entry["blocked_ms"] = round(blocked * 1000, 2)
        if query.answered is not None:  # the answer came before it was read
            entry["answered_ms"] = round((query.answered - query.started) * 1000, 2)
        if isinstance(answer, tuple):  # completions, and the future of their files
            entry["results"] = len(answer[0])
        elif isinstance(answer, list | dict):
            entry["results"] = len(answer)
        elif answer is not None:
            entry["results"] = 1
        self.trace.queries.append(entry)
        return answer


@dataclass(frozen=True)
class Inputs:
    """What a stage may be built from: it keeps the parts it uses, by name."""

    analysis: Analysis
    facts: SteeringFacts
    options: SteeringOptions
    budget: Budget
    trace: Trace
    written: Written
    questions: Questions
    walking: Walking
    hints: Hints


class Stage:
    """One kind of knowledge brought to the decoder. Every hook has a default that
    does nothing, so a stage overrides only the moments it acts at. The Steerer calls
    them in its stages' order:

    - ``ask(point)``: at the cursor and after each token, the questions this trigger
      calls for (through :class:`Questions`, which hands each answer back to its owner);
    - ``observe(point)``: after each token, once every stage has asked;
    - ``due(query)`` / ``answered(query, answer, step, logits)``: before a token,
      whether the stage's pending question is to be waited for now, and what its
      answer does to the logits;
    - ``steer(step, logits)``: before a token, after the answers;
    - ``wanted_rewind()`` / ``rewind(keep)``: a stage may ask the loop to write the
      text again from token ``keep``; every stage then forgets what came after it;
    - ``quiet()``: nothing of this stage's is due at the next token;
    - ``cut_short()``: the stage ended the completion before the model would have, so
      that it may stop mid-statement (post-processing then keeps its complete ones).
    """

    def ask(self, point: TriggerPoint) -> None:
        return None

    def observe(self, point: TriggerPoint) -> None:
        return None

    def due(self, query: Query) -> bool:
        return True

    def answered(
        self, query: Query, answer: Answer, step: Step, logits: torch.Tensor
    ) -> torch.Tensor:
        return logits

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        return logits

    def wanted_rewind(self) -> int | None:
        return None

    def rewind(self, keep: int) -> None:
        return None

    def quiet(self) -> bool:
        return True

    def cut_short(self) -> bool:
        return False
