"""The Steerer's interrupts: hint comment lines spliced into the KV cache.

A hint (the signature of the call being written, a deprecation among the
likely names) is a comment line placed above the current line by cropping the
cache to the line's start and prefilling the comment and the line again
(``CacheView.splice``): only the current line is paid for, never the prompt. One
hint of each kind: a new one replaces the old; hints never reach the result.
While one is shown, comment tokens are suppressed so the model does not continue
the hint's style. The stages decide what to show: a signature
(``stages/signatures.py``), a deprecation (``stages/members.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.processors.suppress import SuppressComments
from steerlsp.models.steering.stages.base import Budget, CacheView, Trace

# A hint is not placed when more than this many tokens would be prefilled again.
MAX_REPREFILL = 96


@dataclass
class _Hint:
    kind: str  # "signature" | "deprecation"
    logical_at: int  # the hint sits right before this logical token
    length: int
    text: str
    call: int | None = None  # the ``(`` offset a signature hint belongs to


class Hints:
    """The hints in one completion's cache, and the interrupts spent placing them."""

    def __init__(
        self, facts: SteeringFacts, options: SteeringOptions, trace: Trace, budget: Budget
    ) -> None:
        self.facts = facts
        self.options = options
        self.trace = trace
        self.budget = budget
        self.interrupts = 0
        self._shown: list[_Hint] = []
        self._comments: SuppressComments | None = None  # built once a hint is shown

    @property
    def shown(self) -> bool:
        return bool(self._shown)

    def place(
        self,
        cache: CacheView,
        history: torch.Tensor,
        logits: torch.Tensor,
        kind: str,
        message: str,
        *,
        at: int,
        call: int | None = None,
    ) -> torch.Tensor:
        """Splice ``message`` as a comment line above the current line; ``at`` is the
        generated text's length (for the trace). The time it takes counts against the
        budget. -> the logits after it"""
        if self.interrupts >= self.options.max_interrupts:
            self.trace.notes.append(f"{kind} hint skipped: interrupt cap reached")
            return logits
        if self.budget.spent:
            whose = self.budget.whose_time()
            self.trace.notes.append(f"{kind} hint skipped: time budget spent ({whose})")
            return logits
        texts = self.facts.vocabulary.texts
        logical = list(history[0].tolist())
        line_start = _line_start(logical, texts)
        if line_start is None:
            self.trace.notes.append(f"{kind} hint skipped: no line start in the prompt")
            return logits
        newline_text = texts[logical[line_start - 1]]
        carried = newline_text[newline_text.rfind("\n") + 1 :]
        line = "".join(texts[t] for t in logical[line_start:])
        lead = "" if carried else line[: len(line) - len(line.lstrip(" \t"))]
        text = f"{lead}# {_one_line(message)}\n{carried}"
        insert = list(self.facts.tokenize(text))
        started = time.perf_counter()
        old = next((h for h in self._shown if h.kind == kind), None)
        if old is not None:  # one hint of each kind: the new one replaces it
            logits = self._splice_out(cache, old)
        where = self._physical(line_start)
        if len(cache.cached) - where > MAX_REPREFILL:
            self.trace.notes.append(f"{kind} hint skipped: the line is too long to prefill again")
            self.budget.spend(time.perf_counter() - started)
            return logits
        logits = cache.splice(where, 0, insert)
        self._shown.append(_Hint(kind, line_start, len(insert), text, call))
        self._shown.sort(key=lambda h: h.logical_at)
        self.interrupts += 1
        spent = time.perf_counter() - started
        self.trace.hints.append({"kind": kind, "text": text.strip(), "replaced": old is not None})
        self.trace.interrupts.append(
            {
                "at": at,
                "reason": f"{kind} hint",
                "reprefilled": len(cache.cached) - where - len(insert),
                "ms": round(spent * 1000, 2),
            }
        )
        self.budget.spend(spent)
        return logits

    def remove(self, cache: CacheView, logits: torch.Tensor, kind: str, *, at: int) -> torch.Tensor:
        """Take the hint of ``kind`` out of the cache, if one is shown."""
        hint = next((h for h in self._shown if h.kind == kind), None)
        if hint is None:
            return logits
        started = time.perf_counter()
        logits = self._splice_out(cache, hint)
        self.trace.interrupts.append(
            {
                "at": at,
                "reason": f"{kind} hint removed",
                "ms": round((time.perf_counter() - started) * 1000, 2),
            }
        )
        return logits

    def suppress_comments(self, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        if self._comments is None:
            self._comments = SuppressComments(self.facts.comment_tokens)
        return self._comments(history, logits)

    def shown_kind(self, kind: str) -> bool:
        return any(h.kind == kind for h in self._shown)

    def call_of(self, kind: str) -> int | None:
        """The ``(`` offset the shown hint of ``kind`` belongs to (None: none shown)."""
        hint = next((h for h in self._shown if h.kind == kind), None)
        return None if hint is None else hint.call

    def _splice_out(self, cache: CacheView, hint: _Hint) -> torch.Tensor:
        where = self._physical(hint.logical_at, before=hint)
        logits = cache.splice(where, hint.length, [])
        self._shown.remove(hint)
        return logits

    def _physical(self, logical: int, before: _Hint | None = None) -> int:
        """Where logical token ``logical`` sits in the cache, after the hints before it."""
        shift = 0
        for hint in self._shown:
            if hint is before:
                break
            if hint.logical_at <= logical:
                shift += hint.length
        return logical + shift


def _line_start(tokens: list[int], texts: Sequence[str]) -> int | None:
    """Index of the first token after the last one that holds a line break, if any."""
    for index in range(len(tokens) - 1, 0, -1):
        token = tokens[index - 1]
        if token < len(texts) and "\n" in texts[token]:
            return index
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:160]
