"""Steering through the API: what the in-process stages know, asked between segments.

``RemoteSteering`` holds the monitor over the text written so far, the analysis
questions (within the completion's caps and budgets) and the explain trace. At a
member access it chooses the name (``members.py``); after each segment it audits
the arguments written (``keywords.py``) and the names each ended statement reads.
"""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from steerlsp.models.options import SteeringOptions
from steerlsp.models.remote.keywords import Closed, Keyword, arguments_written
from steerlsp.models.remote.members import (
    Chosen,
    choose,
    first_tokens,
    plausible,
    traced,
)
from steerlsp.models.steering.analysis import Analysis, AnalysisError, CompletionCandidate
from steerlsp.models.steering.monitor import CallContext, MonitorState, Trigger
from steerlsp.models.steering.parameters import CallShape, argument_spans
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.relevance import DocumentUsage, RankWeights
from steerlsp.models.steering.stages.keywords import counted, given_arguments, shape_of
from steerlsp.models.steering.stages.members import (
    DOCUMENT_FIRST,
    DOCUMENT_TYPED,
    MAX_CANDIDATES,
    dunder,
    static_members,
)
from steerlsp.models.steering.stages.names import (
    MAX_NAMES,
    scope_queries,
    statement_bindings,
    statement_query,
    statement_start,
    static_names,
)
from steerlsp.models.steering.stages.scope import NameCheck, names_in_scope

# The model's constrained choice among names written after a text, where the server
# constrains: ``picker(text)(names)``.
Picker = Callable[[str], Callable[[list[str]], str | None] | None]
# An argument given by keyword (``name=``, not ``==``).
_KEYWORD_ARGUMENT = re.compile(r"[A-Za-z_]\w*\s*=(?!=)")
# A receiver that is the method's own object (``self.``), as in-process.
_SELF_DOT = re.compile(r"(?<![\w.])(?:self|cls)\.[ \t]*$")


class RemoteSteering:
    """Steering through the API for one completion: the monitor over the written text,
    the member walk at a ``.``, the audit after each segment (arguments, undefined
    names), the analysis questions within the caps, and the trace."""

    def __init__(
        self,
        analysis: Analysis,
        options: SteeringOptions,
        *,
        window: str,
        before: str,
        after: str,
        rank: bool = True,
        members: bool = True,
    ) -> None:
        self.analysis, self.options = analysis, options
        # Rank on the server's log-probabilities; else the model chooses under a constraint.
        self.rank = rank
        self.members = members and options.walk  # the walk at ``.`` (else the audit only)
        self.before, self.after = before, after
        self.weights: RankWeights = options.rank_weights()
        self.floor = self.weights.missing_logprob
        self.window = window
        self.monitor = MonitorState()
        self.monitor.update(window)
        self.queries = 0
        self.waited = 0.0
        self.rewinds = 0  # arguments written again
        self.trace: dict[str, Any] = {
            "backend": "openai",
            "rankings": [],
            "queries": [],
            "rewinds": [],
            "notes": [],
        }
        self._usage: DocumentUsage | None = None
        self._mark: tuple[MonitorState, int] = (self.monitor.fork(), 0)  # see ``mark``
        # Undefined names: the check (what is defined, where the statement began), where
        # the statements checked end (monitor offsets), the rewrites spent.
        self._names = (
            NameCheck(statement_start=statement_start(window, self.monitor))
            if options.names and options.max_rewinds > 0
            else None
        )
        self._names_loaded: bool | None = None
        self._checked_upto = len(window)
        self.name_rewinds = 0
        self._written = ""  # what the segments wrote so far (as ``saw`` was told)
        # Signatures asked as soon as a call's argument starts, by the call's ``(``
        # (monitor offset): pylsp answers while the server streams on, and the audit
        # after the segment finds the answer there.
        self._signatures: dict[int, tuple[Future[Any], float]] = {}

    def open(self) -> bool:
        """Whether steering may still ask (the completion's caps)."""
        o = self.options
        return self.queries < o.max_queries_total and self.waited < o.budget_total

    def saw(self, piece: str) -> None:
        self._written += piece
        point = self.monitor.update(piece)
        call = point.call
        if (
            point.trigger is Trigger.CALL_ARGUMENT
            and call is not None
            and call.open_bracket not in self._signatures
            and call.open_bracket >= len(self.window)
            and self.options.keywords
            and counted(call)
            and self.open()
        ):
            self._prefetch(call.open_bracket)

    def _prefetch(self, bracket: int) -> None:
        """Ask the signature of the call whose ``(`` is at ``bracket`` now, on a thread."""
        text = self.before + self._written + self.after
        offset = len(self.before) + len(self._written)
        limit = min(self.options.query_timeout, max(self.options.budget_total - self.waited, 0.0))
        self.queries += 1
        future = _pool().submit(self.analysis.signature_at, text, offset, timeout=limit)
        self._signatures[bracket] = (future, time.perf_counter())

    def mark(self, written: str) -> None:
        """A segment starts after ``written``: what ``audit`` reads from."""
        self._mark = (self.monitor.fork(), len(written))

    def audit(self, written: str, picker: Picker) -> str | None:
        """``written`` with what the last segment got wrong written again and the rest
        dropped: a keyword argument the callee does not take (``keywords.py``), or a
        name a statement reads that nothing defines. None when all stands (or the caps
        are reached)."""
        rewritten = self._audit_keywords(written, picker)
        if rewritten is None:
            rewritten = self._audit_names(written, picker)
        if rewritten is not None:
            self._written = rewritten
            self._signatures = {
                k: v for k, v in self._signatures.items() if k < len(self.window) + len(rewritten)
            }
            mark, start = self._mark
            if len(rewritten) >= start:  # cut within the segment: lex on from its start
                self.monitor = mark.fork()
                self.monitor.update(rewritten[start:])
            else:  # a statement begun in an earlier segment: lex it all again
                self.monitor = MonitorState()
                self.monitor.update(self.window + rewritten)
        return rewritten

    def _audit_names(self, written: str, picker: Picker) -> str | None:
        """The first statement ended since the last look that reads a name nothing
        defines, the name written again as one in scope (the model's choice under the
        server's constraint; without one the statement stands)."""
        check = self._names
        if check is None:
            return None
        whole = self.window + written
        for end in [e for e in self.monitor.statement_ends if e > self._checked_upto]:
            self._checked_upto = end
            if self.name_rewinds < self.options.max_rewinds and self._known_names():
                found = check.check(whole, end, len(self.window))
                cut = found.offset - len(self.window) if found is not None else -1
                pick = picker(written[:cut]) if found is not None and cut >= 0 else None
                if found is not None and pick is not None:
                    names = sorted(n for n in check.known if n.isidentifier() and n != found.name)
                    chosen = pick(names[:MAX_NAMES]) if names else None
                    if chosen is not None:
                        self.name_rewinds += 1
                        self._checked_upto = found.offset
                        self.trace["rewinds"].append(
                            {"kind": "undefined name", "wrote": found.name, "now": chosen}
                        )
                        return written[:cut] + chosen
            check.advance(whole, end)
        return None

    def _known_names(self) -> bool:
        """Whether the names in scope at the cursor are known: read with ``ast`` where the
        document allows, else asked of the analysis (once)."""
        check = self._names
        if check is None:
            return False
        if self._names_loaded is None:
            questions = scope_queries(self.before, self.after)
            static = static_names(questions)
            if static is None:
                whole = statement_query(self.before, self.after)
                static = names_in_scope(whole.text, whole.offset) if whole is not None else None
                if whole is not None and static is not None:
                    static = static | statement_bindings(whole.statement, whole.cursor)
            if static is not None:
                check.known.update(static)
                self._names_loaded = True
            else:
                text, offset = questions[-1]
                items = self._ask(
                    "scope",
                    offset,
                    lambda limit: self.analysis.completions_at(
                        text, offset, timeout=limit, documented=False
                    ),
                )
                check.known.update(c.name for c in items or [])
                self._names_loaded = bool(items)
        return bool(self._names_loaded)

    def _audit_keywords(self, written: str, picker: Picker) -> str | None:
        """``written`` with the first argument of the last segment that the callee does
        not take written again, cut after its ``=`` (``keywords.py``)."""
        if not self.options.keywords or self.rewinds >= self.options.max_rewinds:
            return None
        mark, start = self._mark
        fed = self.window + written[:start]
        for event in arguments_written(mark, fed, written[start:]):
            if not self.open():
                return None
            if isinstance(event, Closed):
                rewritten = self._closed(written, event, picker)
            else:
                cut = event.start - len(self.window)
                if cut < 0:
                    continue  # the name was typed before the cursor: the user's, not ours
                rewritten = self._keyword(written, event, cut, picker(written[:cut]))
            if rewritten is not None:
                self.rewinds += 1
                return rewritten
        return None

    def _shape(self, written: str, end: int, call: CallContext) -> CallShape | None:
        """The callee's parameters, from the signature of the call being written: the
        one asked when its argument started, or asked now at ``end`` (an offset into
        ``written``)."""
        asked = self._signatures.get(call.open_bracket)
        if asked is not None:
            signature = self._answer(asked, len(self.before) + end)
        else:
            text = self.before + written[:end] + self.after
            offset = len(self.before) + end
            signature = self._ask(
                "signature",
                offset,
                lambda limit: self.analysis.signature_at(text, offset, timeout=limit),
            )
        return shape_of(signature, call.callee) if signature is not None else None

    def _answer(self, asked: tuple[Future[Any], float], offset: int) -> Any:
        """A prefetched question's answer, waited for within the budget; None past it."""
        future, sent = asked
        started = time.perf_counter()
        limit = max(self.options.budget_total - self.waited, 0.0)
        try:
            answer, outcome = future.result(timeout=limit), "answered"
        except (AnalysisError, concurrent.futures.TimeoutError) as exc:
            answer, outcome = None, type(exc).__name__
        waited = time.perf_counter() - started
        self.waited += waited
        self.trace["queries"].append(
            {
                "kind": "signature",
                "offset": offset,
                "ms": round((time.perf_counter() - sent) * 1000, 1),
                "waited_ms": round(waited * 1000, 1),
                "outcome": outcome,
                "results": 1 if answer is not None else 0,
            }
        )
        return answer

    def _closed(self, written: str, closed: Closed, picker: Picker) -> str | None:
        """A call the segment closed, its positional arguments past the callee's
        capacity or a required parameter missing written again; None when it stands."""
        call = closed.call
        if not counted(call):
            return None
        params = (self.window + written)[call.open_bracket + 1 : closed.close]
        spans, _ = argument_spans(params)
        given, positional = given_arguments(params)
        by_position = [
            (a, b)
            for a, b in spans
            if not _KEYWORD_ARGUMENT.match(params[a:b]) and not params[a:b].startswith("*")
        ]
        if not by_position:
            return None  # as in-process: the signature is asked once an argument is a value
        close = closed.close - len(self.window)
        shape = self._shape(written, close, call)
        if shape is None:
            return None
        capacity = shape.positional_capacity()
        if capacity is not None and len(by_position) > capacity:
            extra = by_position[capacity]
            start = call.open_bracket + 1 + extra[0] - len(self.window)
            offered = shape.wanted(given, capacity)
            if start < 0 or not offered:
                return None
            chosen = _pick_among(offered, picker(written[:start]))
            self._traced(
                "positional argument", call.callee, params[extra[0] : extra[1]], offered, chosen
            )
            return written[:start] + chosen + "="
        if len(shape.overloads) != 1:
            return None
        required = shape.required(given, positional)
        if not required:
            return None
        lead = ", " if params.strip() else ""
        self._traced("missing argument", call.callee, ")", required, required[0])
        return written[:close] + lead + required[0] + "="

    def _traced(self, kind: str, callee: str, wrote: str, offered: list[str], now: str) -> None:
        self.trace["rewinds"].append(
            {"kind": kind, "callee": callee, "wrote": wrote, "offered": offered[:10], "now": now}
        )

    def _keyword(
        self,
        written: str,
        keyword: Keyword,
        cut: int,
        pick: Callable[[list[str]], str | None] | None,
    ) -> str | None:
        """``written`` up to ``keyword``, then one the callee takes and its ``=``; None
        when the callee takes it (or its parameters cannot be read)."""
        shape = self._shape(written, keyword.end - len(self.window), keyword.call)
        if shape is None:
            return None
        opened = keyword.call.open_bracket + 1
        given, positional = given_arguments(
            (self.window + written)[opened : keyword.call.argument_start]
        )
        if shape.accepts(keyword.name) and keyword.name not in given:
            return None
        offered = shape.wanted(given, positional)
        if not offered:
            return None
        chosen = _pick_among(offered, pick)
        self._traced("keyword", keyword.call.callee, keyword.name, offered, chosen)
        return written[:cut] + chosen + "="

    def due(self) -> bool:
        """Whether the text ends where a member's name is written: after ``obj.``, or in
        the name after it."""
        point = self.monitor.point()
        return point.trigger is Trigger.COMPLETIONS_AFTER_DOT or (
            point.trigger is Trigger.INSIDE_IDENTIFIER and point.after_dot
        )

    def at_dot(
        self,
        written: str,
        top_of: Callable[[], dict[str, float]],
        pick: Callable[[list[str]], str | None] | None,
    ) -> str | None:
        """What to write of the member's name after ``written`` (which ends in ``.`` or
        in the part of the name written, at the cursor), or None for the model's own.
        ``top_of`` asks the k likeliest next tokens (once there are items to rank);
        ``pick`` is the model's constrained choice among the rests of names."""
        if not self.due():
            return None
        typed = self.monitor.point().partial
        text = self.before + written + self.after
        offset = len(self.before) + len(written) - len(typed)
        # Ranking needs the model's first tokens too: asked of the server while the
        # analysis lists the members (a round trip and a token, against pylsp's answer).
        top_future = _pool().submit(top_of) if self.rank else None
        items = self._ask(
            "completions",
            offset,
            lambda limit: self.analysis.completions_at(
                text, offset, timeout=limit, documented=False
            ),
        )
        found = list(items or [])
        items = [c for c in found[:MAX_CANDIDATES] if c.name.startswith(typed) and c.name]
        if not items or all(dunder(c.name) for c in items):
            if items:
                self.trace["notes"].append("only dunders listed: the receiver's type is unknown")
            if top_future is not None:
                top_future.result()  # no request of ours outlives its question
            return None
        static = self.options.mode == "mask" or (
            self.options.mode == "auto" and static_members(found)
        )
        if top_future is None:
            return self._constrained(written, items, typed, static, pick)
        top = top_future.result()
        intent = intent_at(self.before + written)
        items = self._documented(text, offset, items, top, typed, bool(intent.expected))
        own = intent.function if _SELF_DOT.search(self.before + written) else ""
        started = time.perf_counter()
        chosen: Chosen = choose(
            items,
            top,
            intent,
            weights=self.weights,
            static=static,
            escape_margin=self.options.escape_margin,
            pick=_rests(pick, typed) if pick is not None else None,
            usage=self._document_usage() if self.weights.usage else None,
            own=own,
            typed=typed,
        )
        self.waited += time.perf_counter() - started
        ranking = traced(len(written), chosen, intent, len(items))
        ranking["score_ms"] = round((time.perf_counter() - started) * 1000, 1)
        self.trace["rankings"].append(ranking)
        if not self.options.rank or chosen.name is None:
            return None  # ``steering.rank`` off: the model's own name, as it writes it
        return chosen.name[len(typed) :] or None

    def _constrained(
        self,
        written: str,
        items: list[CompletionCandidate],
        typed: str,
        static: bool,
        pick: Callable[[list[str]], str | None] | None,
    ) -> str | None:
        """The model's own choice among the names the ranker would not penalise, under
        the server's constraint; none where the members are not statically known (the
        model may mean a name the list lacks)."""
        if pick is None or not static:
            return None
        names = [c.name for c in plausible(items, typed)]
        started = time.perf_counter()
        chosen = _rests(pick, typed)(names)
        self.waited += time.perf_counter() - started
        self.trace["rankings"].append(
            {
                "offset": len(written),
                "candidates": len(items),
                "by": "the model, constrained to the listed names",
                "among": len(names),
                "chosen": chosen,
                "score_ms": round((time.perf_counter() - started) * 1000, 1),
            }
        )
        if chosen is None:
            return None
        return chosen[len(typed) :] or None

    def _documented(
        self,
        text: str,
        offset: int,
        items: list[CompletionCandidate],
        top: dict[str, float],
        typed: str,
        expected: bool,
    ) -> list[CompletionCandidate]:
        """The contenders with their documentation (what they return, their summary):
        the model's likeliest names, and where a type is expected the first public ones."""
        first = {
            n: v
            for n, (_, v) in first_tokens([c.name for c in items], top, self.floor, typed).items()
        }
        wanted = dict.fromkeys(sorted(first, key=lambda n: -first[n])[:DOCUMENT_FIRST])
        if expected and self.weights.expected_type:
            wanted.update(dict.fromkeys(c.name for c in items if not c.name.startswith("_")))
            wanted = dict.fromkeys(list(wanted)[: DOCUMENT_FIRST + DOCUMENT_TYPED])
        asked = [c for c in items if c.name in wanted and not c.documentation]
        if not asked:
            return items
        answer = self._ask(
            "documentation",
            offset,
            lambda limit: self.analysis.documented(text, offset, asked, timeout=limit),
        )
        found = {c.name: c for c in answer or []}
        return [found.get(c.name, c) for c in items]

    def _ask(self, what: str, offset: int, question: Callable[[float], Any]) -> Any:
        """One question within its limit and the completion's budget; None past them."""
        o = self.options
        limit = min(o.query_timeout, max(o.budget_total - self.waited, 0.0))
        if limit <= 0 or self.queries >= o.max_queries_total:
            return None
        self.queries += 1
        started = time.perf_counter()
        try:
            answer, outcome = question(limit), "answered"
        except AnalysisError as exc:
            answer, outcome = None, type(exc).__name__
        elapsed = time.perf_counter() - started
        self.waited += elapsed
        self.trace["queries"].append(
            {
                "kind": what,
                "offset": offset,
                "ms": round(elapsed * 1000, 1),
                "outcome": outcome,
                "results": len(answer) if isinstance(answer, list) else 0,
            }
        )
        return answer

    def _document_usage(self) -> DocumentUsage:
        if self._usage is None:
            self._usage = DocumentUsage(self.before, self.after)
        return self._usage


def _rests(
    pick: Callable[[list[str]], str | None], typed: str
) -> Callable[[list[str]], str | None]:
    """``pick`` for full names: it chooses among what is left of each after ``typed``."""

    def picked(names: list[str]) -> str | None:
        rests = {name[len(typed) :]: name for name in names if len(name) > len(typed)}
        chosen = pick(list(rests)) if rests else None
        return rests.get(chosen) if chosen is not None else None

    return picked


def _pick_among(offered: list[str], pick: Callable[[list[str]], str | None] | None) -> str:
    """The model's choice among ``offered`` where the server constrains, else the first
    (a required parameter, or the signature's order)."""
    chosen = pick(offered) if pick is not None and len(offered) > 1 else None
    return chosen if chosen in offered else offered[0]


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The threads prefetched questions wait on (the analysis answers on its own loop)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="steerlsp-remote")
        return _POOL
