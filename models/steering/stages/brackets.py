"""The bracket stage: no token closes a bracket the code has not opened.

At every step in code (not in a string or a comment), the tokens whose
brackets would close one that is not the innermost open, or close one when
none is open, are ruled out (``processors/brackets.py``): an unmatched ``)``
is a syntax error the completion would carry into the file. Only where the
monitor began lexing at the document's start or a top-level line, so that the
brackets it holds open are the code's own (``Written.lexed_whole``).
"""

from __future__ import annotations

import torch

from steerlsp.models.steering.processors.brackets import BracketPrograms, UnmatchedClosers
from steerlsp.models.steering.stages.base import Inputs, Stage, Step
from steerlsp.models.steering.stages.written import Written


class Closers(Stage):
    """Rules out closing brackets that close nothing open (see the module docstring)."""

    def __init__(self, written: Written, programs: BracketPrograms) -> None:
        self.written = written
        self.programs = programs

    @classmethod
    def build(cls, inputs: Inputs) -> Closers | None:
        if not (inputs.options.brackets and inputs.written.lexed_whole):
            return None
        return cls(inputs.written, inputs.facts.bracket_programs)

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        monitor = self.written.monitor
        if monitor.context != "code":
            return logits
        return UnmatchedClosers(self.programs, monitor.open_brackets())(step.history, logits)
