"""The Steerer's undefined-name stage: the names in scope, and the walk after a rewind.

At each statement's end the Steerer asks :class:`NameGuard` whether the
statement reads a name nothing defines (``models/steering/stages/scope.py``). If it does, the
decode loop rewinds to that name's first token and :func:`names_walk` steers
the token written there again: the name that was read is demoted below every
other token, and the names in scope are boosted, with the usual escape for a
model that is far more sure of something else (a literal, say).
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import Analysis, CompletionCandidate
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.monitor import MonitorState
from steerlsp.models.steering.processors.candidates import CandidateWalk, Demote
from steerlsp.models.steering.stages.scope import NameCheck, Undefined
from steerlsp.models.steering.tokens.trie import CandidateTrie

# Names in scope offered to the walk after a rewind (Jedi lists ~150 builtins alone).
MAX_NAMES = 600


def scope_query(before: str, after: str) -> tuple[str, int]:
    """The document with the cursor's line replaced by a ``pass`` at its indentation, and
    the offset before it: a statement's start, where the analysis lists every name in
    scope. (On a line of only whitespace at the end of a file, Jedi sees the module's
    scope, not the function's: the parameters would be missing.)"""
    line_start = before.rfind("\n") + 1
    line = before[line_start:]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    newline = after.find("\n")
    rest = after[newline:] if newline >= 0 else "\n"
    return before[:line_start] + indent + "pass" + rest, line_start + len(indent)


def statement_start(window: str, monitor: MonitorState) -> int | None:
    """Where the statement the cursor is in began, when it began on the cursor's line
    (``monitor`` has read ``window``: the newline before the line ended a statement);
    else None."""
    line_start = window.rfind("\n") + 1
    return line_start if line_start and line_start - 1 in monitor.statement_ends[-1:] else None


class NameGuard:
    """Per completion: the scope query, the names known so far, and the rewinds spent."""

    def __init__(
        self,
        analysis: Analysis,
        facts: SteeringFacts,
        options: SteeringOptions,
        *,
        window: str,
        before: str,
        after: str,
        monitor: MonitorState,
        limit: float,
    ) -> None:
        text, offset = scope_query(before, after)
        self.options = options
        self.facts = facts
        self.started = time.perf_counter()
        self.key = (hash(text), offset)
        known = facts.scopes.get(self.key)
        self.future: concurrent.futures.Future[list[CompletionCandidate]]
        if known is not None:  # the same question as a keystroke ago
            self.future = concurrent.futures.Future()
            self.future.set_result([CompletionCandidate(name) for name in known])
        else:
            self.future = facts.pool.submit(
                analysis.completions_at, text, offset, timeout=limit, documented=False
            )
        self.remembered = known is not None
        self.check = NameCheck(statement_start=statement_start(window, monitor))
        self.checked_upto = len(window)  # statement ends before this are the user's
        self.rewinds = 0
        self.loaded: bool | None = None  # None: not yet; False: the query failed

    def ready(self, trace: Any) -> bool:
        """Whether the names in scope are known (does not wait for them)."""
        if self.loaded is None and self.future.done():
            entry: dict[str, Any] = {
                "query": "scope",
                "latency_ms": round((time.perf_counter() - self.started) * 1000, 2),
            }
            try:
                items = self.future.result()
            except Exception as exc:  # a failed question only means no checking
                self.loaded = False
                entry.update(outcome="error", error=f"{type(exc).__name__}: {exc}"[:200])
            else:
                self.loaded = bool(items)
                self.check.known.update(c.name for c in items)
                entry.update(outcome="ok", results=len(items), remembered=self.remembered)
                if items and not self.remembered:
                    self.facts.remember_scope(self.key, tuple(c.name for c in items))
            trace.queries.append(entry)
        return bool(self.loaded)

    def may_rewind(self) -> bool:
        return self.rewinds < self.options.max_rewinds

    def statement(self, text: str, end: int, generated_from: int, trace: Any) -> Undefined | None:
        """A statement ended at ``end``: the name to rewrite, or None (it then stands)."""
        self.checked_upto = end
        if self.ready(trace) and self.may_rewind():
            found = self.check.check(text, end, generated_from)
            if found is not None:
                return found
        self.check.advance(text, end)
        return None


def names_walk(
    known: set[str],
    undefined: str,
    *,
    lead: str,
    banned: int,
    context: str,
    facts: SteeringFacts,
    options: SteeringOptions,
    start: int,
) -> tuple[list[Any], CandidateWalk] | None:
    """The processors for the token that wrote ``undefined``: ``banned`` (that token)
    demoted, the names in scope (each after ``lead``, the text the token had before the
    name) boosted. None when no name can be spelled."""
    names = sorted(n for n in known if n.isidentifier() and n != undefined)[:MAX_NAMES]
    trie = CandidateTrie.in_context(
        [lead + n for n in names],
        context=context,
        tokenize=facts.tokenize,
        vocabulary=facts.vocabulary,
    )
    if not len(trie):
        return None
    walk = CandidateWalk(
        trie, mode="boost", delta=options.delta, escape_margin=options.escape_margin, start=start
    )
    demote = Demote(torch.tensor([banned], dtype=torch.long), steps=1, start=start)
    return [demote, walk], walk
