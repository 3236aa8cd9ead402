"""Degenerate repetition: a multi-line completion ends before it writes a line, or a
pair of lines, that it has already written.

A small model that has lost its way in a body writes the same comment and
assignment pair again, or the same call twice. Post-processing cuts a piece
only once it repeats three times (``prompts/postprocess.py``); this stage acts
at the first repeat. When a generated line ends (a newline) and that line, or
it and the line before it, already stand earlier in the generated text, the
decode loop rewinds to the repeated line's start and the next token is one that
ends the completion. Only lines with some substance count (at least
:data:`MIN_LINE` characters besides indentation, holding a letter or digit):
``)``, ``else:`` or ``pass`` repeat in correct code, and so does the same
``return`` in two branches (a single line of those does not count; a pair
does). The user's own text is never compared: a body may well repeat a line
from above the cursor.
"""

from __future__ import annotations

import re

import torch

from steerlsp.models.steering.monitor import TriggerPoint
from steerlsp.models.steering.stages.base import Inputs, Stage, Step

# The shortest line (indentation and trailing spaces left out) whose repeat counts.
MIN_LINE = 8
# Statements that end a branch: the same one in two branches is no loop.
_FLOW = re.compile(r"\s*(return|raise|yield|continue|break|pass)\b")


def repeated_from(text: str) -> int | None:
    """Where the repeat that ``text``'s last complete line makes starts (the offset of
    the first line to drop), or None. ``text`` ends with a newline. The last line
    repeats when it already stands earlier (a line of substance, not a bare
    ``return``-like statement, which branches repeat); the last two lines repeat when
    they already stand, in that order, earlier (together of substance)."""
    lines = text.split("\n")[:-1]  # the complete lines
    if len(lines) < 2:
        return None
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    last = lines[-1]
    if _substantial(last) and not _FLOW.match(last) and last in lines[:-1]:
        return starts[-1]
    pair = lines[-2:]
    if _substantial("".join(pair)):
        for i in range(len(lines) - 3):
            if lines[i : i + 2] == pair:
                return starts[-2]
    return None


def _substantial(line: str) -> bool:
    code = line.strip()
    return len(code) >= MIN_LINE and any(char.isalnum() for char in code)


class RepeatedLines(Stage):
    """Ends the completion before its first repeated line (or pair of lines)."""

    def __init__(self, inputs: Inputs) -> None:
        self.written = inputs.written
        self.trace = inputs.trace
        self.end_ids = sorted(inputs.facts.end_ids)
        self._cut: tuple[int, int] | None = None  # tokens to keep, characters dropped
        self._ending = False
        self._ended = False  # the completion was ended here

    @classmethod
    def build(cls, inputs: Inputs) -> RepeatedLines | None:
        """None where no token can end the text (a model without an EOS)."""
        return cls(inputs) if inputs.facts.end_ids else None

    def observe(self, point: TriggerPoint) -> None:
        text = self.written.text
        if self._cut is not None or self._ending or not text.endswith("\n"):
            return
        start = repeated_from(text)
        if start is None:
            return
        # Keep the tokens that end at or before the repeated line's start.
        keep = sum(1 for end in self.written.ends if end <= start)
        self._cut = (keep, len(text) - len(self.written.kept(keep)))

    def wanted_rewind(self) -> int | None:
        return None if self._cut is None else self._cut[0]

    def rewind(self, keep: int) -> None:
        if self._cut is None:
            return
        wanted, dropped = self._cut
        self._cut = None
        if keep != wanted:  # another stage's rewind came first: look again later
            return
        self._ending = True
        self.trace.interrupts.append(
            {
                "at": len(self.written.kept(keep)),
                "reason": "repeated line",
                "rewound": len(self.written.tokens) - keep,
                "dropped_chars": dropped,
            }
        )

    def quiet(self) -> bool:
        return self._cut is None and not self._ending

    def cut_short(self) -> bool:
        """A repeat inside a statement (the same item in a list) ends it open."""
        return self._ended

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        """After the rewind: only a token that ends the completion. logits [1, V]"""
        if not self._ending:
            return logits
        self._ending, self._ended = False, True
        ended = torch.full_like(logits, float("-inf"))
        ended[0, torch.tensor(self.end_ids, dtype=torch.long, device=logits.device)] = 0.0
        return ended
