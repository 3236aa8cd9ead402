"""What the remote steering's stages share: their inputs, read the same way by each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steerlsp.models.options import SteeringOptions
from steerlsp.models.remote.questions import Questions
from steerlsp.models.steering.analysis import Analysis


@dataclass(frozen=True)
class Inputs:
    """What every remote stage of one completion reads: the analysis, the options, the
    shared question budget and trace, and the text (``window``: what the monitor lexes
    before the cursor; ``before``/``after``: the document around it)."""

    analysis: Analysis
    options: SteeringOptions
    questions: Questions
    trace: dict[str, Any]
    window: str
    before: str
    after: str


class Stage:
    """A remote stage: the member walk, the argument audit, the name audit."""

    def __init__(self, inputs: Inputs) -> None:
        self.analysis, self.options = inputs.analysis, inputs.options
        self.questions, self.trace = inputs.questions, inputs.trace
        self.window, self.before, self.after = inputs.window, inputs.before, inputs.after
