"""A scripted :class:`Analysis`: fixed answers to the decode loop's questions."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from steerlsp.models.steering.analysis import (
    DEFAULT_TIMEOUT,
    AnalysisTimeout,
    CompletionCandidate,
    DefinitionSource,
    Signature,
)

# A scripted answer's key: an exact (text, offset), or a trigger text that the
# text before the offset ends with.
Key = tuple[str, int] | str
T = TypeVar("T")


@dataclass
class ScriptedAnalysis:
    """Fixed answers, for tests of the decode loop's mechanics.

    An exact ``(text, offset)`` key wins; otherwise the longest trigger text
    that ``text[:offset]`` ends with. Unscripted questions get no result.
    ``latency`` seconds pass before each answer; a latency over the budget
    sleeps for the budget and raises :class:`AnalysisTimeout`, as a slow
    server would. Every question is recorded in ``calls``.
    """

    completions: Mapping[Key, Sequence[CompletionCandidate]] = field(default_factory=dict)
    signatures: Mapping[Key, Signature] = field(default_factory=dict)
    definitions: Mapping[Key, DefinitionSource] = field(default_factory=dict)
    # name -> documentation, given by ``documented`` to items listed without it
    documentation: Mapping[str, str] = field(default_factory=dict)
    # name -> its defining class or module, given by ``documented`` too (as pylsp's
    # ``completionItem/resolve`` gives Jedi's ``detail``)
    details: Mapping[str, str] = field(default_factory=dict)
    latency: float = 0.0
    calls: list[tuple[str, str, int]] = field(default_factory=list)
    documented_for: list[tuple[str, ...]] = field(default_factory=list)

    def completions_at(
        self,
        text: str,
        offset: int,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        documented: bool = True,
    ) -> list[CompletionCandidate]:
        """The scripted candidates for this position, or an empty list."""
        found = self._answer("completions_at", self.completions, text, offset, timeout)
        return list(found) if found is not None else []

    def documented(
        self,
        text: str,
        offset: int,
        items: Sequence[CompletionCandidate],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> list[CompletionCandidate]:
        """``items``, each with its scripted documentation where it has none (the names
        asked go to ``documented_for``, not ``calls``: at once, whatever ``latency``)."""
        if not 0 <= offset <= len(text):
            raise ValueError(f"offset {offset} is outside the text (length {len(text)})")
        self.documented_for.append(tuple(c.name for c in items))
        return [
            replace(
                c,
                documentation=c.documentation or self.documentation.get(c.name, ""),
                detail=c.detail or self.details.get(c.name, ""),
            )
            for c in items
        ]

    def signature_at(
        self, text: str, offset: int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> Signature | None:
        """The scripted signature for this position, or None."""
        return self._answer("signature_at", self.signatures, text, offset, timeout)

    def definition_source(
        self, text: str, offset: int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> DefinitionSource | None:
        """The scripted definition for this position, or None."""
        return self._answer("definition_source", self.definitions, text, offset, timeout)

    def _answer(
        self, question: str, script: Mapping[Key, T], text: str, offset: int, timeout: float
    ) -> T | None:
        if not 0 <= offset <= len(text):
            raise ValueError(f"offset {offset} is outside the text (length {len(text)})")
        self.calls.append((question, text, offset))
        if self.latency > timeout:
            time.sleep(timeout)
            raise AnalysisTimeout(f"{question} took over {timeout:.3f}s")
        if self.latency > 0:
            time.sleep(self.latency)
        return answer_for(script, text, offset)


def answer_for(script: Mapping[Key, T], text: str, offset: int) -> T | None:
    """The scripted answer for ``(text, offset)``: exact key first, then the longest
    trigger text that ``text[:offset]`` ends with."""
    exact = script.get((text, offset))
    if exact is not None:
        return exact
    before = text[:offset]
    triggers = [key for key in script if isinstance(key, str) and before.endswith(key)]
    return script[max(triggers, key=len)] if triggers else None
