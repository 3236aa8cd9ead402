"""Ranking one completion list for the walk after ``.`` (``models/steering/stages/members.py``).

The signals live in ``models/steering/ranking/relevance.py``; this is the order they are
computed in on the decode thread: first-token log-probabilities for every
name, whole names only for a shortlist, deprecations last.
"""

from __future__ import annotations

import math
import time
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
    whole name's: the ``proxy`` ranking. The whole names of the best
    :data:`SHORTLIST` are then scored in one pass (a token tree), unless the model's
    favourite already leads and no other shortlisted name shares its first token
    (the pass cannot change the winner then).
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
        self.scored = 0
        self.score_ms = 0.0

    def item(self, name: str) -> CompletionCandidate:
        return self.items[name]

    def _ranking(
        self, logprobs: dict[str, float], deprecated: dict[str, Deprecation]
    ) -> list[Ranked]:
        used = self.usage.score if self.usage is not None else (lambda name: 0.0)
        candidates = [
            Candidate(
                c.name, c.documentation, c.kind, c.name in deprecated, c.returns, used(c.name)
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
        """Log-probabilities to rank by: whole names for the shortlist when it is
        scored (the rest then count as unlikely), else every name's first token."""
        names = [r.name for r in self.proxy[:SHORTLIST]]
        shortlist = list(dict.fromkeys([*names, self.favourite]))
        tokens = {n: list(trie.spellings[remainder[n]].tokens) for n in shortlist}
        lead = tokens[self.favourite][0]
        shared = sum(1 for n in shortlist if tokens[n][0] == lead) > 1  # ``long``, ``longlong``
        if self.proxy[0].name == self.favourite and not shared:
            return self.first_token
        started = time.perf_counter()
        scores = scorer.score_continuations(
            logits,
            [tokens[n] for n in shortlist],
            self.breaks,
        )
        self.score_ms = (time.perf_counter() - started) * 1000
        self.scored = len(shortlist)
        return {n: s for n, s in zip(shortlist, scores, strict=True) if math.isfinite(s)}

    def final(self, logprobs: dict[str, float], deprecated: dict[str, Deprecation]) -> list[Ranked]:
        """The items, best first, with the deprecations known by now."""
        return self._ranking(logprobs, deprecated)

    def traced(self, offset: int, ranked: list[Ranked]) -> dict[str, Any]:
        """The final ranking for the explain trace: the parts of each score, for
        explain and for tuning the weights offline (``bench/tune_rank.py``)."""
        return {
            "offset": offset,
            "candidates": len(self.items),
            "scored": self.scored,  # 0: the model's favourite won on first tokens alone
            "score_ms": round(self.score_ms, 2),
            "intent": self.intent.function,
            "expected": self.intent.expected,
            "top": [
                {
                    "name": r.name,
                    "score": round(r.score, 3),
                    "logprob": round(r.logprob, 3),
                    "relevance": round(r.relevance, 3),
                    "metadata": r.metadata,
                    "expected": r.expected,
                    "usage": r.usage,
                }
                for r in ranked[:RANKED_IN_TRACE]
            ],
        }
