"""The signature stage: at a call's first argument, the callee's signature as a hint.

The question is asked when ``(`` opens a call; its answer is placed (as a
comment line above the current line, ``stages/hints.py``) at the first step it
is in, if the call is still open, and taken out again once the call closes.
"""

from __future__ import annotations

import torch

from steerlsp.models.steering.analysis import Signature
from steerlsp.models.steering.monitor import Trigger, TriggerPoint
from steerlsp.models.steering.stages.base import Answer, Inputs, Query, Stage, Step


class SignatureHints(Stage):
    """Signature hints for the calls the completion writes."""

    def __init__(self, inputs: Inputs) -> None:
        self.analysis = inputs.analysis
        self.facts = inputs.facts
        self.options = inputs.options
        self.trace = inputs.trace
        self.written = inputs.written
        self.questions = inputs.questions
        self.hints = inputs.hints
        self._drop = False  # its call closed: remove the hint at the next step

    def ask(self, point: TriggerPoint) -> None:
        call = point.call
        if not (self.options.hints and point.trigger is Trigger.CALL_ARGUMENT and call):
            return
        if call.argument_index:
            return
        pool, signature_at = self.facts.pool, self.analysis.signature_at
        self.questions.ask(
            "signature",
            point,
            point.offset,
            lambda text, offset, limit: pool.submit(signature_at, text, offset, timeout=limit),
            self,
        )

    def observe(self, point: TriggerPoint) -> None:
        """After each token: a signature hint whose call closed goes at the next step."""
        call = self.hints.call_of("signature")
        if self.hints.shown_kind("signature") and call not in self.written.monitor.open_calls():
            self._drop = True

    def due(self, query: Query) -> bool:
        # Only when in: a signature that arrives a few tokens late is still worth showing.
        return query.future.done()

    def answered(
        self, query: Query, answer: Answer, step: Step, logits: torch.Tensor
    ) -> torch.Tensor:
        call = query.point.call
        if call is not None and call.open_bracket not in self.written.monitor.open_calls():
            self.trace.notes.append("signature hint skipped: its call closed")
        elif isinstance(answer, Signature) and call is not None:
            logits = self.hints.place(
                step.cache,
                step.history,
                logits,
                "signature",
                f"signature: {answer.label}",
                at=len(self.written.text),
                call=call.open_bracket,
            )
        return logits

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        if not self._drop:
            return logits
        self._drop = False
        return self.hints.remove(step.cache, logits, "signature", at=len(self.written.text))

    def rewind(self, keep: int) -> None:
        self._drop = False  # what closed the call is gone
