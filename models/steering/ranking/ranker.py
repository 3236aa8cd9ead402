"""Ranking one completion list for the walk after ``.`` (``models/steering/stages/members.py``).

The signals live in ``models/steering/ranking/relevance.py``; this is the order they are
computed in on the decode thread: first-token log-probabilities for every
name, whole names only for a shortlist, deprecations last.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from steerlsp.models.deprecation.static import Deprecation
from steerlsp.models.steering.analysis import CompletionCandidate
from steerlsp.models.steering.ranking.intent import Intent
from steerlsp.models.steering.ranking.relevance import (
    Candidate,
    DocumentUsage,
    Ranked,
    RankWeights,
    rank_candidates,
)
from steerlsp.models.steering.stages.base import ScorerView
from steerlsp.models.steering.tokens.trie import CandidateTrie

# Candidates scored whole by the model: the best few on first tokens.
SHORTLIST = 6
# Ranked candidates the trace lists, with the parts of their scores.
RANKED_IN_TRACE = 30


class Ranker:
    """Ranks one completion list (model log-probability, relevance, metadata).

    First on each name's first-token log-probability, an upper bound of the
    whole name's: the ``proxy`` ranking, whose scores bound the final ones. The
    whole names of the best :data:`SHORTLIST` are then scored (a token tree per
    pass), unless the model's favourite already leads and no other shortlisted
    name shares its first token (scoring cannot change the winner then). Scoring
    is by bounds, as branch and bound: the leader, the favourite and the names
    sharing the leader's first token first; the rest of the shortlist only where
    its bound beats the best whole score, which it seldom does. A name left out
    is ranked by its bound; should a deprecation make one of them the winner, it
    is scored then (:meth:`final`). Each pass computes the whole vocabulary's
    logits for each of its tokens (~6 ms a token on 2 cores), so the fewer the
    better.
    """

    def __init__(
        self,
        intent: Intent,
        items: list[CompletionCandidate],
        first_token: dict[str, float],
        *,
        typed: str,
        weights: RankWeights,
        breaks: torch.Tensor,
        usage: DocumentUsage | None = None,
        own: str = "",
    ) -> None:
        self.intent = intent
        self.own = own  # the method being written, on its own receiver (rank_candidates)
        self.usage = usage
        self.weights = weights
        self.breaks = breaks  # [V] bool: the tokens that end an identifier
        self.items = {c.name: c for c in items}
        self.first_token = first_token
        self.typed = typed
        self.favourite = max(items, key=lambda c: first_token[c.name]).name
        self.proxy = self._ranking(first_token, {})
        self.bound = {r.name: r.score for r in self.proxy}  # no whole name scores higher
        self.pending: list[str] = []  # shortlisted, ranked by their bound: not scored
        self._pass: Callable[[list[str]], dict[str, float]] | None = None
        self.scored = 0
        self.passes = 0
        self.score_ms = 0.0

    def item(self, name: str) -> CompletionCandidate:
        return self.items[name]

    def _ranking(
        self, logprobs: dict[str, float], deprecated: dict[str, Deprecation]
    ) -> list[Ranked]:
        used = self.usage.score if self.usage is not None else (lambda name: 0.0)
        candidates = [
            Candidate(
                c.name,
                c.documentation,
                c.kind,
                c.name in deprecated,
                self.intent.returns(c.name, c.returns, c.detail),
                used(c.name),
            )
            for c in self.items.values()
        ]
        replacements = {n: d.replacement for n, d in deprecated.items() if d.replacement}
        return rank_candidates(
            self.intent,
            candidates,
            logprobs,
            typed=self.typed,
            weights=self.weights,
            replacements=replacements,
            own=self.own,
        )

    def score(
        self,
        scorer: ScorerView,
        logits: torch.Tensor,
        trie: CandidateTrie,
        remainder: dict[str, str],
    ) -> dict[str, float]:
        """Log-probabilities to rank by: whole names where scored, the first token's
        (a bound) for the shortlisted names left out, none (the floor) for the rest;
        every name's first token when scoring cannot change the winner."""
        names = [r.name for r in self.proxy[:SHORTLIST]]
        shortlist = list(dict.fromkeys([*names, self.favourite]))
        tokens = {n: list(trie.spellings[remainder[n]].tokens) for n in shortlist}
        lead = tokens[self.favourite][0]
        shared = sum(1 for n in shortlist if tokens[n][0] == lead) > 1  # ``long``, ``longlong``
        if self.proxy[0].name == self.favourite and not shared:
            return self.first_token
        self._pass = lambda wanted: self._whole(scorer, logits, wanted, tokens)
        leader = self.proxy[0].name
        first = [
            n
            for n in shortlist
            if n in (leader, self.favourite) or tokens[n][0] == tokens[leader][0]
        ]
        logprobs = self._pass(first)
        self.pending = [n for n in shortlist if n not in logprobs]
        best = max((self._bounded(n, logprobs[n]) for n in logprobs), default=-math.inf)
        rest = [n for n in self.pending if self.bound[n] > best]
        if rest:
            logprobs.update(self._pass(rest))
        self.pending = [n for n in self.pending if n not in logprobs]
        return {**logprobs, **{n: self.first_token[n] for n in self.pending}}

    def final(self, logprobs: dict[str, float], deprecated: dict[str, Deprecation]) -> list[Ranked]:
        """The items, best first, with the deprecations known by now. A name left
        unscored (ranked by its bound) that wins once the deprecated are demoted is
        scored now, with the others whose bounds beat the best whole score."""
        ranked = self._ranking(logprobs, deprecated)
        if self.pending and ranked[0].name in self.pending and self._pass is not None:
            whole = {r.score for r in ranked if r.name in logprobs and r.name not in self.pending}
            best = max(whole, default=-math.inf)
            at = {r.name: r.score for r in ranked}
            rest = [n for n in self.pending if at[n] > best]
            logprobs = {**logprobs, **self._pass(rest)}
            self.pending = [n for n in self.pending if n not in rest]
            ranked = self._ranking(logprobs, deprecated)
        return ranked

    def _whole(
        self,
        scorer: ScorerView,
        logits: torch.Tensor,
        names: list[str],
        tokens: dict[str, list[int]],
    ) -> dict[str, float]:
        """One scoring pass: the whole names' log-probabilities (finite ones only)."""
        if not names:
            return {}
        started = time.perf_counter()
        scores = scorer.score_continuations(logits, [tokens[n] for n in names], self.breaks)
        self.score_ms += (time.perf_counter() - started) * 1000
        self.scored += len(names)
        self.passes += 1
        return {n: s for n, s in zip(names, scores, strict=True) if math.isfinite(s)}

    def _bounded(self, name: str, logprob: float) -> float:
        """The proxy score of ``name`` with its whole log-probability for its first token's."""
        floor = self.weights.missing_logprob
        gap = max(self.first_token[name], floor) - max(logprob, floor)
        return self.bound[name] - self.weights.logprob * gap

    def traced(self, offset: int, ranked: list[Ranked]) -> dict[str, Any]:
        """The final ranking for the explain trace: the parts of each score, for
        explain and for tuning the weights offline (``bench/tune_rank.py``)."""
        return {
            "offset": offset,
            "candidates": len(self.items),
            "scored": self.scored,  # 0: the model's favourite won on first tokens alone
            "passes": self.passes,
            "score_ms": round(self.score_ms, 2),
            "intent": self.intent.function,
            "expected": self.intent.expected,
            "top": [r.traced() for r in ranked[:RANKED_IN_TRACE]],
        }
