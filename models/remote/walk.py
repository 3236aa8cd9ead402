"""The member walk of the remote steering: at a ``.`` (or in the name after it), the
analysis lists the receiver's members and one is chosen to write (``members.py``),
ranked on the server's first-token log-probabilities, or chosen by the model under
the server's constraint where it gives no log-probabilities."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from steerlsp.models.remote.arguments import Pick
from steerlsp.models.remote.members import (
    Chosen,
    choose,
    decided,
    first_tokens,
    plausible,
    traced,
)
from steerlsp.models.remote.questions import pool
from steerlsp.models.remote.stage import Inputs, Stage
from steerlsp.models.steering.analysis import CompletionCandidate
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.relevance import DocumentUsage, RankWeights
from steerlsp.models.steering.stages.members import (
    DOCUMENT_FIRST,
    DOCUMENT_TYPED,
    MAX_CANDIDATES,
    dunder,
    static_members,
)

# A receiver that is the method's own object (``self.``), as in-process.
_SELF_DOT = re.compile(r"(?<![\w.])(?:self|cls)\.[ \t]*$")


class MemberWalk(Stage):
    """The member names one completion writes (see the module doc)."""

    def __init__(self, inputs: Inputs, *, rank: bool) -> None:
        super().__init__(inputs)
        self.rank = rank  # on the server's log-probabilities; else the model, constrained
        self.weights: RankWeights = inputs.options.rank_weights()
        self._usage: DocumentUsage | None = None

    def choose(
        self,
        written: str,
        typed: str,
        top_of: Callable[[], dict[str, float]],
        pick: Pick | None,
    ) -> str | None:
        """What to write of the member's name after ``written`` (which ends in ``.`` and
        ``typed``, the part of the name written), or None for the model's own."""
        text = self.before + written + self.after
        offset = len(self.before) + len(written) - len(typed)
        # Ranking needs the model's first tokens too: asked of the server while the
        # analysis lists the members (a round trip and a token, against pylsp's answer).
        top_future = pool().submit(top_of) if self.rank else None
        items = self.questions.ask(
            "completions",
            offset,
            lambda limit: self.analysis.completions_at(
                text, offset, timeout=limit, documented=False
            ),
        )
        found = list(items or [])
        items = [c for c in found[:MAX_CANDIDATES] if c.name.startswith(typed) and c.name]
        if not items or all(dunder(c.name) for c in items):
            if items:
                self.trace["notes"].append("only dunders listed: the receiver's type is unknown")
            if top_future is not None:
                top_future.result()  # no request of ours outlives its question
            return None
        static = self.options.mode == "mask" or (
            self.options.mode == "auto" and static_members(found)
        )
        if top_future is None:
            return self._constrained(written, items, typed, static, pick)
        top = top_future.result()
        intent = intent_at(self.before + written)
        own = intent.function if _SELF_DOT.search(self.before + written) else ""
        usage = self._document_usage() if self.weights.usage else None
        # The documentation only where it can still change the choice.
        documented = decided(items, top, intent, weights=self.weights, typed=typed) is None
        if documented:
            items = self._documented(text, offset, items, top, typed, bool(intent.expected))
        started = time.perf_counter()
        chosen: Chosen = choose(
            items,
            top,
            intent,
            weights=self.weights,
            static=static,
            escape_margin=self.options.escape_margin,
            pick=_rests(pick, typed) if pick is not None else None,
            usage=usage,
            own=own,
            typed=typed,
        )
        self.questions.spend(time.perf_counter() - started)
        ranking = traced(len(written), chosen, intent, len(items))
        ranking["documented"] = documented
        ranking["score_ms"] = round((time.perf_counter() - started) * 1000, 1)
        self.trace["rankings"].append(ranking)
        if not self.options.rank or chosen.name is None:
            return None  # ``steering.rank`` off: the model's own name, as it writes it
        return chosen.name[len(typed) :] or None

    def _constrained(
        self,
        written: str,
        items: list[CompletionCandidate],
        typed: str,
        static: bool,
        pick: Pick | None,
    ) -> str | None:
        """The model's own choice among the names the ranker would not penalise, under
        the server's constraint; none where the members are not statically known (the
        model may mean a name the list lacks)."""
        if pick is None or not static:
            return None
        names = [c.name for c in plausible(items, typed)]
        started = time.perf_counter()
        chosen = _rests(pick, typed)(names)
        self.questions.spend(time.perf_counter() - started)
        self.trace["rankings"].append(
            {
                "offset": len(written),
                "candidates": len(items),
                "by": "the model, constrained to the listed names",
                "among": len(names),
                "chosen": chosen,
                "score_ms": round((time.perf_counter() - started) * 1000, 1),
            }
        )
        if chosen is None:
            return None
        return chosen[len(typed) :] or None

    def _documented(
        self,
        text: str,
        offset: int,
        items: list[CompletionCandidate],
        top: dict[str, float],
        typed: str,
        expected: bool,
    ) -> list[CompletionCandidate]:
        """The contenders with their documentation (what they return, their summary):
        the model's likeliest names, and where a type is expected the first public ones."""
        floor = self.weights.missing_logprob
        first = {
            n: v for n, (_, v) in first_tokens([c.name for c in items], top, floor, typed).items()
        }
        wanted = dict.fromkeys(sorted(first, key=lambda n: -first[n])[:DOCUMENT_FIRST])
        if expected and self.weights.expected_type:
            wanted.update(dict.fromkeys(c.name for c in items if not c.name.startswith("_")))
            wanted = dict.fromkeys(list(wanted)[: DOCUMENT_FIRST + DOCUMENT_TYPED])
        asked = [c for c in items if c.name in wanted and not c.documentation]
        if not asked:
            return items
        answer = self.questions.ask(
            "documentation",
            offset,
            lambda limit: self.analysis.documented(text, offset, asked, timeout=limit),
        )
        found = {c.name: c for c in answer or []}
        return [found.get(c.name, c) for c in items]

    def _document_usage(self) -> DocumentUsage:
        if self._usage is None:
            self._usage = DocumentUsage(self.before, self.after)
        return self._usage


def _rests(pick: Pick, typed: str) -> Pick:
    """``pick`` for full names: it chooses among what is left of each after ``typed``."""

    def picked(names: list[str]) -> str | None:
        rests = {name[len(typed) :]: name for name in names if len(name) > len(typed)}
        chosen = pick(list(rests)) if rests else None
        return rests.get(chosen) if chosen is not None else None

    return picked
