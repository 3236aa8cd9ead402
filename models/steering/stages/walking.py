"""The walk under way: the processors one stage built to steer an identifier.

One walk at a time, whichever stage started it (the walk after ``.``, the
names walk after a rewind): a new one ends the old. The walk's trace entry
gets what it wrote once it ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.processors.candidates import CandidateWalk, WalkState
from steerlsp.models.steering.stages.base import Trace


@dataclass
class Walk:
    processors: list[LogitsProcessor]
    walks: list[CandidateWalk]  # the walk is over when none of these is still walking
    partial: str  # what was written of the name when the walk began
    offset: int = -1  # the monitor offset of the trigger it answers (where the name starts)

    @property
    def walking(self) -> bool:
        return any(walk.state is WalkState.WALKING for walk in self.walks)


class Walking:
    """The one walk under way, if any, and the trace entries of the walks."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.current: Walk | None = None

    def start(self, walk: Walk, entry: dict[str, Any]) -> None:
        """End the walk under way (if any) and start ``walk``, traced as ``entry``."""
        self.end()
        self.current = walk
        self.trace.walks.append(entry)

    def apply(self, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """The walk's processors on this step's logits; the walk ends when it is over."""
        # history: [1, T]; logits: [1, V]
        walk = self.current
        assert walk is not None
        for processor in walk.processors:
            logits = processor(history, logits)
        if not walk.walking:
            self.end()
        return logits

    def end(self) -> None:
        walk = self.current
        if walk is None:
            return
        ended = [w.chosen[0] for w in walk.walks if w.state is WalkState.ENDED and w.chosen]
        if self.trace.walks and "wrote" not in self.trace.walks[-1]:
            self.trace.walks[-1]["wrote"] = walk.partial + ended[0] if ended else None
        self.current = None

    def rewind(self) -> None:
        """The text was written again: the walk's tokens are gone, it wrote nothing."""
        self.current = None

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        """The only tokens the next step can take under a masking walk; None: all rows.
        -> [N] long"""
        walk = self.current
        if walk is None:
            return None
        known = [rows for w in walk.walks if (rows := w.next_rows(history)) is not None]
        return min(known, key=len) if known else None  # each is a superset of the allowed

    def draft(self, history: torch.Tensor) -> list[int]:
        """The tokens the walk under way expects after ``history`` [1, T]: the rest of
        the best name that goes on from here, looked for in its narrowest trie first
        (the ranker's followed names), then in the wider ones; empty when none is
        under way or no name goes on."""
        walk = self.current
        if walk is None:
            return []
        for candidates in sorted(walk.walks, key=lambda w: len(w.trie)):
            if tokens := candidates.draft(history):
                return tokens
        return []
