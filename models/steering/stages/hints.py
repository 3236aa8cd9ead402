"""The Steerer's interrupts: hint comment lines spliced into the KV cache.

A hint (the signature of the call being written, a deprecation among the
likely names) is a comment line placed above the current line by cropping the
cache to the line's start and prefilling the comment and the line again
(``Engine.splice``): only the current line is paid for, never the prompt. One
hint of each kind: a new one replaces the old; a signature hint goes once its
call closes; hints never reach the result. While one is shown, comment tokens
are suppressed so the model does not continue the hint's style.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.processors.suppress import SuppressComments

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

    def __init__(self, facts: SteeringFacts, options: SteeringOptions, trace: Any) -> None:
        self.facts = facts
        self.options = options
        self.trace = trace
        self.interrupts = 0
        self._shown: list[_Hint] = []
        self._comments: SuppressComments | None = None  # built once a hint is shown
        self._drop_signature = False  # its call closed: remove the hint at the next step

    @property
    def shown(self) -> bool:
        return bool(self._shown)

    def place(
        self,
        engine: Any,
        history: torch.Tensor,
        logits: torch.Tensor,
        kind: str,
        message: str,
        *,
        at: int,
        waited: float,
        call: int | None = None,
    ) -> tuple[torch.Tensor, float]:
        """Splice ``message`` as a comment line above the current line; ``at`` is the
        generated text's length (for the trace), ``waited`` the seconds spent so far.
        -> the logits after it, and the seconds it took."""
        if self.interrupts >= self.options.max_interrupts:
            self.trace.notes.append(f"{kind} hint skipped: interrupt cap reached")
            return logits, 0.0
        if waited >= self.options.budget:
            self.trace.notes.append(f"{kind} hint skipped: time budget spent")
            return logits, 0.0
        texts = self.facts.vocabulary.texts
        logical = list(history[0].tolist())
        line_start = _line_start(logical, texts)
        if line_start is None:
            self.trace.notes.append(f"{kind} hint skipped: no line start in the prompt")
            return logits, 0.0
        newline_text = texts[logical[line_start - 1]]
        carried = newline_text[newline_text.rfind("\n") + 1 :]
        line = "".join(texts[t] for t in logical[line_start:])
        lead = "" if carried else line[: len(line) - len(line.lstrip(" \t"))]
        text = f"{lead}# {_one_line(message)}\n{carried}"
        insert = list(self.facts.tokenize(text))
        started = time.perf_counter()
        old = next((h for h in self._shown if h.kind == kind), None)
        if old is not None:  # one hint of each kind: the new one replaces it
            logits = self._splice_out(engine, old)
        where = self._physical(line_start)
        if len(engine.cached) - where > MAX_REPREFILL:
            self.trace.notes.append(f"{kind} hint skipped: the line is too long to prefill again")
            return logits, time.perf_counter() - started
        logits = engine.splice(where, 0, insert)
        self._shown.append(_Hint(kind, line_start, len(insert), text, call))
        self._shown.sort(key=lambda h: h.logical_at)
        self.interrupts += 1
        spent = time.perf_counter() - started
        self.trace.hints.append({"kind": kind, "text": text.strip(), "replaced": old is not None})
        self.trace.interrupts.append(
            {
                "at": at,
                "reason": f"{kind} hint",
                "reprefilled": len(engine.cached) - where - len(insert),
                "ms": round(spent * 1000, 2),
            }
        )
        return logits, spent

    def remove(self, engine: Any, logits: torch.Tensor, kind: str, *, at: int) -> torch.Tensor:
        """Take the hint of ``kind`` out of the cache, if one is shown."""
        hint = next((h for h in self._shown if h.kind == kind), None)
        if hint is None:
            return logits
        started = time.perf_counter()
        logits = self._splice_out(engine, hint)
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

    def note_open_calls(self, open_calls: Sequence[int]) -> None:
        """After each token: a signature hint whose call closed goes at the next step."""
        hint = next((h for h in self._shown if h.kind == "signature"), None)
        if hint is not None and hint.call not in open_calls:
            self._drop_signature = True

    def drop_closed(self, engine: Any, logits: torch.Tensor, *, at: int) -> torch.Tensor:
        if not self._drop_signature:
            return logits
        self._drop_signature = False
        return self.remove(engine, logits, "signature", at=at)

    def forget_closed(self) -> None:
        """The text was rewound: what closed the call is gone."""
        self._drop_signature = False

    def _splice_out(self, engine: Any, hint: _Hint) -> torch.Tensor:
        where = self._physical(hint.logical_at, before=hint)
        logits = engine.splice(where, hint.length, [])
        self._shown.remove(hint)
        return logits  # type: ignore[no-any-return]

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
