"""The walk after ``.``: the receiver's members, ranked, steer the name written next.

At a trigger (``obj.``, ``obj.na``, ``from pkg import``) the completion items
are asked, and with them the files of their classes (for deprecations). When
the name is due, the items that continue what was typed are spelled as a token
trie in the line's context, and the contenders are documented (unless their
documentation cannot change the choice); the ranker scores them by whole-identifier
log-probability (one pass on the shared cache, as a token tree), intent
relevance and metadata, while the contenders' definitions are resolved
(``stages/deprecations.py``); a deprecated favourite gets a hint; then the
processors (``processors/candidates.py``) walk the identifier token by token
along the chosen names.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import torch

from steerlsp.models.deprecation.static import Deprecation
from steerlsp.models.steering.analysis import CompletionCandidate
from steerlsp.models.steering.monitor import Trigger, TriggerPoint
from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.processors.candidates import (
    CALLED,
    CandidateWalk,
    Demote,
    FollowByKind,
)
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.ranker import Ranker
from steerlsp.models.steering.ranking.relevance import (
    Candidate,
    DocumentUsage,
    Intent,
    settled_without_documentation,
)
from steerlsp.models.steering.stages.base import Answer, Files, Inputs, Query, Stage, Step
from steerlsp.models.steering.stages.deprecations import Deprecations, definition_files
from steerlsp.models.steering.stages.walking import Walk
from steerlsp.models.steering.tokens.trie import CandidateTrie

# Candidates resolved to their definitions to read their deprecation: this many of the
# model's likeliest names, and this many of the ranker's.
RESOLVE_FOR_DEPRECATION = 2
# Candidates whose documentation (its summary line for relevance, the return type in
# its signature) is asked once the name is due: this many of the model's likeliest
# names, and this many of the ranker's on their names alone. Each is a Jedi inference
# in ``completionItem/resolve``: asking them for the first 40 items of every list cost
# the first question of a document 0.3 to 0.5 s.
DOCUMENT_FIRST = 6
DOCUMENT_RANKED = 4
# Where the expression must have a type (``return`` in a ``-> dict`` function), what
# each item returns (its signature, in its documentation) counts too: the first this
# many public items are documented as well.
DOCUMENT_TYPED = 40
# A receiver that is the method's own object: ``self.`` or ``cls.`` (not ``x.self.``).
_SELF_DOT = re.compile(r"(?<![\w.])(?:self|cls)\.[ \t]*$")
# Candidate lists longer than this are cut (the server's order) before spelling.
MAX_CANDIDATES = 400

_KINDS = frozenset(
    {"property", "attribute", "field", "variable", "constant", "enummember"}
    | {"method", "function", "constructor", "class", "module", "keyword"}
)


@dataclass(frozen=True)
class _Listed:
    """What a walk's ranking starts from: the step, its logits, the trigger, the items
    listed there (and the files of their classes), and their spellings."""

    step: Step
    logits: torch.Tensor
    point: TriggerPoint
    found: list[CompletionCandidate]
    files: Files | None
    spelled: _Spelled


@dataclass
class _Spelled:
    """The items that continue what was typed, and their spellings after it."""

    typed: str
    items: list[CompletionCandidate]
    trie: CandidateTrie
    remainder: dict[str, str]  # name -> what is left to write of it


class MemberWalk(Stage):
    """Asks for the completion items at a trigger and walks the name along them."""

    def __init__(self, inputs: Inputs) -> None:
        self.analysis = inputs.analysis
        self.facts = inputs.facts
        self.options = inputs.options
        self.trace = inputs.trace
        self.written = inputs.written
        self.questions = inputs.questions
        self.budget = inputs.budget
        self.walking = inputs.walking
        self.hints = inputs.hints
        self.deprecations = Deprecations(inputs)
        self.weights = inputs.options.rank_weights()
        self._usage: DocumentUsage | None = None
        self._intent: tuple[str, Intent] | None = None  # the text it was read from, and it

    # ---- asking ----------------------------------------------------------------------

    def ask(self, point: TriggerPoint) -> None:
        if not self.options.walk:
            return
        # A dot right after a walked name (``obj.config.``) starts the next walk: the
        # old one would only notice its end at the next step, one token late.
        walk = self.walking.current
        if walk is not None and walk.offset == point.partial_start:
            return
        at_name = point.trigger is Trigger.COMPLETIONS_AFTER_DOT or (
            point.trigger is Trigger.INSIDE_IDENTIFIER and point.after_dot
        )
        if at_name or point.trigger is Trigger.IMPORT_NAME:
            self.questions.ask(
                "completions",
                point,
                point.partial_start,
                lambda text, offset, limit: self.facts.pool.submit(
                    self._completions_then_files, text, offset, limit
                ),
                self,
            )

    def _completions_then_files(
        self, text: str, offset: int, limit: float
    ) -> tuple[list[CompletionCandidate], Files | None]:
        """On a pool thread: the items, and (started as soon as they arrive, so the
        deprecations are read by the time the name is due) the files of their classes."""
        items = self.analysis.completions_at(text, offset, timeout=limit, documented=False)
        if not (self.options.deprecation and items):
            return items, None
        files = self.facts.pool.submit(
            definition_files, self.analysis, self.facts, text, offset, items, limit
        )
        return items, files

    # ---- the answer: rank, then walk ------------------------------------------------

    def answered(
        self, query: Query, answer: Answer, step: Step, logits: torch.Tensor
    ) -> torch.Tensor:
        # Due now, always: the identifier's first token is chosen at this step.
        found, files = answer if isinstance(answer, tuple) else ([], None)
        if not found:
            return logits
        return self._start(step, logits, query.point, found, files)

    def _start(
        self,
        step: Step,
        logits: torch.Tensor,
        point: TriggerPoint,
        found: list[CompletionCandidate],
        files: Files | None,
    ) -> torch.Tensor:
        o = self.options
        spelled = self._spell(point, found)
        if spelled is None:
            return logits
        trie, remainder = spelled.trie, spelled.remainder
        first = torch.log_softmax(logits[0].float(), dim=-1)
        first_token = {
            c.name: float(first[trie.spellings[remainder[c.name]].tokens[0]]) for c in spelled.items
        }
        settled = self._settled(found, spelled, first_token)
        items = spelled.items
        if settled is None:
            items = self._documented(point, items, first_token, spelled.typed)
        by_first = sorted(items, key=lambda c: -first_token[c.name])
        listed = _Listed(step, logits, point, found, files, spelled)
        ranker, logprobs, deprecated = self._rank(listed, items, first_token)
        if settled is not None and settled in deprecated:
            # The leader is deprecated: the others' documentation may decide after all.
            items = self._documented(point, items, first_token, spelled.typed)
            ranker, logprobs, deprecated = self._rank(listed, items, first_token)
        favourite = by_first[0].name
        if o.hints and favourite in deprecated:
            note = deprecated[favourite]
            better = f"; use {note.replacement}" if note.replacement else ""
            message = f"note: {favourite} is deprecated{better}"
            at = len(self.written.text)
            logits = self.hints.place(
                step.cache, step.history, logits, "deprecation", message, at=at
            )
        chosen = [c.name for c in items]
        if ranker is not None and logprobs is not None:
            ranked = ranker.final(logprobs, deprecated)
            chosen = [r.name for r in ranked]
            traced = ranker.traced(len(self.written.text), ranked)
            traced["documented"] = not (settled is not None and settled not in deprecated)
            self.trace.rankings.append(traced)
        self._walk(step, point, found, spelled, chosen, deprecated)
        return logits

    def _settled(
        self,
        found: list[CompletionCandidate],
        spelled: _Spelled,
        first_token: dict[str, float],
    ) -> str | None:
        """The name the walk will write whatever the items' documentation says, where
        that is sure before asking for it (``settled_without_documentation``): the
        ranker follows one name of a statically known list, so the order after the
        first does not matter. None: ask."""
        o = self.options
        static = o.mode == "mask" or (o.mode == "auto" and static_members(found))
        if not (o.rank and o.follow == 1 and static):
            return None
        used = self._document_usage().score if self.weights.usage else (lambda name: 0.0)
        trie, remainder = spelled.trie, spelled.remainder
        return settled_without_documentation(
            [Candidate(c.name, "", c.kind, c.deprecated, "", used(c.name)) for c in spelled.items],
            first_token,
            self._intent_of(self.written.whole),
            weights=self.weights,
            first_of={n: trie.spellings[r].tokens[0] for n, r in remainder.items()},
            typed=spelled.typed,
        )

    def _rank(
        self, listed: _Listed, items: list[CompletionCandidate], first_token: dict[str, float]
    ) -> tuple[Ranker | None, dict[str, float] | None, dict[str, Deprecation]]:
        """The ranker over ``items``, its log-probabilities (scored while the
        contenders' definitions are resolved), and the deprecations found."""
        o = self.options
        point, spelled = listed.point, listed.spelled
        by_first = sorted(items, key=lambda c: -first_token[c.name])
        ranker = self._ranker(point, items, first_token, spelled.typed) if o.rank else None
        # Who could be chosen: the model's likeliest names and the ranker's (on first tokens).
        contenders = by_first[:RESOLVE_FOR_DEPRECATION]
        if ranker is not None:
            contenders += [ranker.item(r.name) for r in ranker.proxy[:RESOLVE_FOR_DEPRECATION]]
        # ``object``'s dunders are never deprecated: not worth a definition each.
        contenders = [c for c in contenders if not dunder(c.name)]
        asked = (
            self.deprecations.ask(point, listed.found, items, contenders, listed.files)
            if o.deprecation
            else None
        )
        # The scoring pass runs while the analysis resolves the contenders' definitions.
        logprobs = (
            ranker.score(listed.step.scorer, listed.logits, spelled.trie, spelled.remainder)
            if ranker is not None
            else None
        )
        return ranker, logprobs, self.deprecations.read(items, asked)

    def _documented(
        self,
        point: TriggerPoint,
        items: list[CompletionCandidate],
        first_token: dict[str, float],
        typed: str,
    ) -> list[CompletionCandidate]:
        """``items``, the contenders among them with their documentation: the model's
        likeliest names and the ranker's on their names (and, where a type is
        expected, the first public items, for what they return). Listed without it, so which
        items are documented depends on the text and the logits alone, not on what
        an earlier question happened to resolve."""
        by_first = sorted(items, key=lambda c: -first_token[c.name])[:DOCUMENT_FIRST]
        contenders = dict.fromkeys(c.name for c in by_first)
        if self.options.rank:
            ranker = self._ranker(point, items, first_token, typed)
            contenders.update(dict.fromkeys(r.name for r in ranker.proxy[:DOCUMENT_RANKED]))
            if ranker.intent.expected and self.weights.expected_type:
                public = [c.name for c in items if not c.name.startswith("_")]
                contenders.update(dict.fromkeys(public[:DOCUMENT_TYPED]))
        wanted = [c for c in items if c.name in contenders and not c.documentation]
        if not wanted:
            return items
        text, offset = self.written.speculative(point.partial_start)
        future = self.facts.pool.submit(
            self.analysis.documented, text, offset, wanted, timeout=self.budget.limit
        )
        at = self.written.generated(point.offset)
        answer = self.budget.wait(Query("documentation", future, time.perf_counter(), point, at))
        documented: dict[str, CompletionCandidate] = (
            {c.name: c for c in answer} if isinstance(answer, list) else {}
        )
        return [documented.get(c.name, c) for c in items]

    def _spell(self, point: TriggerPoint, found: list[CompletionCandidate]) -> _Spelled | None:
        """The items that continue what was typed, spelled in the line's context; None
        (with a note, where it says something) when none can be walked along."""
        typed = self.written.monitor.point().partial if self.written.current_partial(point) else ""
        items = [c for c in found[:MAX_CANDIDATES] if c.name.startswith(typed) and c.name]
        if not items:
            self.trace.notes.append(f"no completion item continues {typed!r}")
            return None
        if not typed.startswith("_") and all(dunder(c.name) for c in items):
            # ``object``'s members alone: Jedi did not infer the receiver's type.
            self.trace.notes.append("only dunders listed: the receiver's type is unknown")
            return None
        trie = CandidateTrie.in_context(
            [c.name[len(typed) :] for c in items],
            context=self.written.line_context(),
            tokenize=self.facts.tokenize,
            vocabulary=self.facts.vocabulary,
        )
        items = [c for c in items if c.name[len(typed) :] in trie.spellings]
        if not items or not len(trie):
            return None
        remainder = {c.name: c.name[len(typed) :] for c in items}
        return _Spelled(typed, items, trie, remainder)

    def _ranker(
        self,
        point: TriggerPoint,
        items: list[CompletionCandidate],
        first_token: dict[str, float],
        typed: str,
    ) -> Ranker:
        intent = self._intent_of(self.written.whole)
        own_receiver = _SELF_DOT.search(self.written.whole[: point.partial_start])
        return Ranker(
            intent,
            items,
            first_token,
            typed=typed,
            weights=self.weights,
            breaks=self.facts.vocabulary.identifier_break_mask,
            usage=self._document_usage() if self.weights.usage else None,
            own=intent.function if own_receiver else "",
        )

    def _walk(
        self,
        step: Step,
        point: TriggerPoint,
        found: list[CompletionCandidate],
        spelled: _Spelled,
        chosen: list[str],
        deprecated: dict[str, Deprecation],
    ) -> None:
        """Start the walk along ``chosen`` (best first): the processors, and the trace."""
        o = self.options
        trie, remainder, typed = spelled.trie, spelled.remainder, spelled.typed
        mask = o.mode == "mask" or (o.mode == "auto" and static_members(found))
        start = step.history.shape[-1]
        processors: list[LogitsProcessor] = []
        if mask:
            processors.append(CandidateWalk(trie, mode="mask", start=start))
        followed = [remainder[n] for n in chosen[: max(1, o.follow)]] if o.rank else None
        walk_trie = (
            trie
            if followed is None
            else CandidateTrie(
                [trie.spellings[r] for r in followed if r in trie.spellings], trie.vocabulary
            )
        )
        # A static list is complete: the ranker's choice among it is followed, not only
        # boosted (its score already holds the model's log-probability). Elsewhere the
        # boost keeps its escape, for names missing from the list.
        hard = mask and followed is not None
        walk = CandidateWalk(
            walk_trie,
            mode="mask" if hard else "boost",
            delta=o.delta,
            escape_margin=o.escape_margin,
            start=start,
        )
        processors.append(walk)
        if deprecated:
            names = [remainder[n] for n in deprecated if n in remainder]
            leading = trie.leading_only_to([], names)
            if len(leading):
                processors.append(
                    Demote(leading, among=trie.allowed_next([]), steps=1, start=start)
                )
        if o.follow_kind:
            # Where the expression is passed as a value (a decorator, an argument), a
            # method is as often named as called: ``(`` is the model's to choose.
            kinds = {
                remainder[c.name]: c.kind
                for c in spelled.items
                if c.kind in _KINDS and not (point.passed and c.kind in CALLED)
            }
            processors.append(FollowByKind(trie, kinds, delta=o.delta, start=start))
        walks = [p for p in processors if isinstance(p, CandidateWalk)]
        entry = {
            "at": len(self.written.text),
            "typed": typed,
            "candidates": len(spelled.items),
            "mode": "mask" if mask else "boost",
            "followed": [typed + r for r in followed] if followed else "all",
            "deprecated": sorted(deprecated),
        }
        self.walking.start(Walk(processors, walks, typed, point.partial_start), entry)

    def _intent_of(self, whole: str) -> Intent:
        """The intent at the end of ``whole``, read once per text: a walk builds its
        ranker twice (before and after the contenders' documentation), and the
        expected type is a parse."""
        if self._intent is None or self._intent[0] != whole:
            self._intent = (whole, intent_at(whole))
        return self._intent[1]

    def _document_usage(self) -> DocumentUsage:
        """The names the document already uses (read once per completion)."""
        if self._usage is None:
            self._usage = DocumentUsage(self.written.before, self.written.after)
        return self._usage


def static_members(found: list[CompletionCandidate]) -> bool:
    """Whether the receiver's members look statically known: a list with some name of
    its own (only ``object``'s dunders means Jedi did not infer the type) and without
    ``__getattr__`` (which makes any name possible)."""
    own = any(not dunder(c.name) for c in found)
    return own and not any(c.name == "__getattr__" for c in found)


def dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")
