"""Interrupt-guided decoding: the stages that steer one completion, in order.

One :class:`Steerer` steers one completion from inside ``Engine.generate``, on
the decode thread. Each stage brings one kind of knowledge
(``models/steering/stages/``): the walk after ``.`` (:class:`MemberWalk`, with
ranking and deprecations), signature hints (:class:`SignatureHints`), undefined
names (:class:`UndefinedNames`), keyword arguments (:class:`KeywordArguments`), repeated
lines (:class:`RepeatedLines`), closing brackets (:class:`Closers`), string literals
(:class:`StringEnds`). The Steerer
calls them in :data:`STAGES`' order (see :class:`Stage` for the moments), holds the
one :class:`Budget` and collects the :class:`Trace`:

1. ``observe`` (after each token is chosen, before its forward pass): the
   stages ask their questions on the query pool, so the language server's
   latency overlaps the forward pass, then check what was written;
1b. ``rewind``: when a stage wants the text written again, how many tokens to keep;
2. ``steer`` (before the next token is chosen): the due answers go to the
   stages that asked (a timeout leaves the step unsteered and is traced), each
   stage steers, the walk under way (if any) applies its processors, and every
   token whose choice the steering changed is traced.

Nothing here talks LSP: answers come through the :class:`Analysis` seam.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import Analysis
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.stages.base import Budget, Decoder, Inputs, Stage, Step, Trace
from steerlsp.models.steering.stages.brackets import Closers
from steerlsp.models.steering.stages.hints import Hints
from steerlsp.models.steering.stages.imports import UnusedImports
from steerlsp.models.steering.stages.keywords import KeywordArguments
from steerlsp.models.steering.stages.members import MemberWalk
from steerlsp.models.steering.stages.names import UndefinedNames
from steerlsp.models.steering.stages.questions import Questions
from steerlsp.models.steering.stages.repetition import RepeatedLines
from steerlsp.models.steering.stages.signatures import SignatureHints
from steerlsp.models.steering.stages.strings import StringEnds
from steerlsp.models.steering.stages.walking import Walking
from steerlsp.models.steering.stages.written import Written

# The stages, in the order they ask, observe and steer. Each builds itself from the
# completion's inputs (None: switched off by its options).
STAGES: tuple[Callable[[Inputs], Stage | None], ...] = (
    MemberWalk,
    SignatureHints,
    UndefinedNames.build,
    KeywordArguments.build,
    UnusedImports.build,
    RepeatedLines.build,
    Closers.build,
    StringEnds.build,
)


class Steerer:
    """Steers one completion (see the module docstring). Used on the decode thread only."""

    def __init__(
        self,
        *,
        analysis: Analysis,
        facts: SteeringFacts,
        options: SteeringOptions,
        window: str,
        before: str,
        after: str,
        prompt_length: int,
    ) -> None:
        self.facts = facts
        self.options = options
        self.trace = Trace()
        self.budget = Budget(options, self.trace)
        self.written = Written(window=window, before=before, after=after)
        self.questions = Questions(self.budget, self.trace, self.written)
        self.walking = Walking(self.trace)
        self.hints = Hints(facts, options, self.trace, self.budget)
        inputs = Inputs(
            analysis=analysis,
            facts=facts,
            options=options,
            budget=self.budget,
            trace=self.trace,
            written=self.written,
            questions=self.questions,
            walking=self.walking,
            hints=self.hints,
        )
        self.stages = [stage for build in STAGES if (stage := build(inputs)) is not None]
        self._prompt_length = prompt_length
        # The cursor itself may be a trigger (``profile.|``): ask now, so that the
        # answer overlaps the prompt's prefill.
        point = self.written.monitor.point()
        for stage in self.stages:
            stage.ask(point)

    # ---- after a token is chosen ------------------------------------------------------

    def observe(self, token: int, text: str) -> None:
        point = self.written.observe(token, text)
        self.budget.at_line(self.written.text.count("\n"))
        for stage in self.stages:
            stage.ask(point)
        for stage in self.stages:
            stage.observe(point)

    def rewind(self) -> int | None:
        """How many generated tokens to keep, when a stage wants the rest written again
        (after :meth:`observe`); every stage, and the text, go back to that point."""
        keep = next((k for s in self.stages if (k := s.wanted_rewind()) is not None), None)
        if keep is None:
            return None
        for stage in self.stages:
            stage.rewind(keep)
        self.written.rewind(keep)
        self.questions.rewind(len(self.written.whole))
        self.walking.rewind()
        return keep

    def quiet(self) -> bool:
        """Nothing is due at the next token: no query out, no rewind to start, no hint
        in the cache. ``steer`` then applies the walk under way, if any, and nothing
        else: a function of the history and the logits, so the loop may verify drafted
        tokens (a name the prompt already spells) and steer each, as it would one by one."""
        return self._nothing_due()

    def cut_short(self) -> bool:
        """A stage ended the completion (a repeated line): it may end mid-statement."""
        return any(stage.cut_short() for stage in self.stages)

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        """The only tokens the next step can take, when a masking walk is under way and
        nothing else is due (a query or hint would need every logit): the loop then
        computes the LM head for these rows only. None: all rows. -> [N] long"""
        return self.walking.rows(history) if self._nothing_due() else None

    def draft(self, history: torch.Tensor) -> list[int]:
        """The tokens the walk under way will write after ``history`` if the model
        agrees (the rest of the name it follows), when nothing else is due: the loop
        verifies them in one forward pass instead of one pass each."""
        return self.walking.draft(history) if self._nothing_due() else []

    def _nothing_due(self) -> bool:
        """No question out, no stage with work at the next step, no hint in the cache."""
        return (
            not self.questions.pending
            and all(stage.quiet() for stage in self.stages)
            and not self.hints.shown
        )

    # ---- before a token is chosen -----------------------------------------------------

    def steer(self, engine: Decoder, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """history: [1, T] prompt + generated; logits: [1, V] -> [1, V]"""
        step = Step(history, engine.cache, engine.scorer)
        raw = logits
        hinted = self.hints.shown  # a hint taken out at this step still shaped ``raw``
        for query in list(self.questions.pending):
            owner = query.owner
            assert owner is not None
            if owner.due(query):
                self.questions.take(query)
                logits = owner.answered(query, self.budget.wait(query), step, logits)
        for stage in self.stages:
            logits = stage.steer(step, logits)
        by = "hint" if hinted else "stage"
        if self.walking.current is not None:
            logits, by = self.walking.apply(history, logits), "walk"
        elif self.hints.shown:
            logits, by = self.hints.suppress_comments(history, logits), "hint"
        self._record_change(history, raw, logits, by)
        return logits

    def _record_change(
        self, history: torch.Tensor, raw: torch.Tensor, steered: torch.Tensor, by: str
    ) -> None:
        before, after = int(raw.argmax()), int(steered.argmax())
        if before == after:
            return
        step = history.shape[-1] - self._prompt_length
        if self.trace.changed and self.trace.changed[-1]["step"] == step:
            return  # steered again: the draft verified here was not kept
        probs = torch.softmax(raw[0].float(), dim=-1)
        texts = self.facts.vocabulary.texts
        self.trace.changed.append(
            {
                "step": step,
                "at": len(self.written.text),
                "before": texts[before] if before < len(texts) else str(before),
                "after": texts[after] if after < len(texts) else str(after),
                "p_before": round(float(probs[before]), 4),
                "p_after": round(float(probs[after]), 4),
                "by": by,
            }
        )
