"""The ranker scores whole names by bounds: only those that can still win.

A whole name's log-probability is at most its first token's, so the proxy ranking
(on first tokens) bounds every final score. These tests drive ``Ranker`` with a
scorer that returns given whole log-probabilities and records its passes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import SimpleNamespace

import pytest
import torch

from steerlsp.models.deprecation.static import Deprecation
from steerlsp.models.steering.analysis import CompletionCandidate
from steerlsp.models.steering.ranking.ranker import SHORTLIST, Ranker
from steerlsp.models.steering.ranking.relevance import Intent, RankWeights


class WholeScores:
    """Scores each token sequence by a table; records each pass's names."""

    def __init__(self, whole: dict[str, float], tokens: dict[str, list[int]]) -> None:
        self.by_tokens = {tuple(tokens[n]): score for n, score in whole.items()}
        self.names = {tuple(t): n for n, t in tokens.items()}
        self.passes: list[list[str]] = []

    def score_continuations(
        self, logits: torch.Tensor, sequences: Sequence[Sequence[int]], ends: torch.Tensor
    ) -> list[float]:
        self.passes.append([self.names[tuple(s)] for s in sequences])
        return [self.by_tokens[tuple(s)] for s in sequences]


def ranker(first: dict[str, float], tokens: dict[str, list[int]]) -> tuple[Ranker, SimpleNamespace]:
    items = [CompletionCandidate(name, "property") for name in first]
    trie = SimpleNamespace(spellings={n: SimpleNamespace(tokens=t) for n, t in tokens.items()})
    made = Ranker(
        Intent(),
        items,
        first,
        typed="",
        weights=RankWeights(),
        breaks=torch.zeros(8, dtype=torch.bool),
    )
    return made, trie


def score(
    first: dict[str, float], whole: dict[str, float], tokens: dict[str, list[int]]
) -> tuple[Ranker, WholeScores, dict[str, float]]:
    made, trie = ranker(first, tokens)
    scorer = WholeScores(whole, tokens)
    logprobs = made.score(scorer, torch.zeros(1, 8), trie, {n: n for n in first})  # type: ignore[arg-type]
    return made, scorer, logprobs


# Distinct first tokens, except ``alpha_one``/``alpha_two`` (one ``alpha`` token).
TOKENS = {
    "alpha_one": [1, 2],
    "alpha_two": [1, 3],
    "beta": [4],
    "gamma": [5, 6],
    "delta": [7, 6],
}


def test_a_name_whose_bound_cannot_beat_the_best_whole_score_is_not_scored():
    first = {"alpha_one": -0.5, "alpha_two": -0.5, "beta": -3.0, "gamma": -4.0, "delta": -6.0}
    whole = {"alpha_one": -0.7, "alpha_two": -2.5, "beta": -3.1, "gamma": -4.2, "delta": -6.5}
    made, scorer, logprobs = score(first, whole, TOKENS)
    # The leader and the names sharing its first token, in one pass; no other can win.
    assert scorer.passes == [["alpha_one", "alpha_two"]]
    assert made.pending == ["beta", "gamma", "delta"] and made.passes == 1
    assert logprobs["alpha_one"] == -0.7 and logprobs["beta"] == -3.0  # a bound
    assert made.final(logprobs, {})[0].name == "alpha_one"


def test_a_name_whose_bound_beats_the_best_whole_score_is_scored_and_can_win():
    first = {"alpha_one": -0.5, "alpha_two": -0.6, "beta": -1.0, "gamma": -4.0, "delta": -6.0}
    # ``alpha``'s continuations are unlikely: beta's bound (-1.0) beats both.
    whole = {"alpha_one": -3.0, "alpha_two": -3.5, "beta": -1.2, "gamma": -4.5, "delta": -9.0}
    made, scorer, logprobs = score(first, whole, TOKENS)
    assert scorer.passes == [["alpha_one", "alpha_two"], ["beta"]]
    assert made.pending == ["gamma", "delta"]
    assert made.final(logprobs, {})[0].name == "beta"


def test_a_deprecated_winner_makes_the_pending_names_that_can_win_scored():
    first = {"alpha_one": -0.5, "alpha_two": -0.5, "beta": -3.0, "gamma": -4.0, "delta": -6.0}
    whole = {"alpha_one": -0.7, "alpha_two": -2.5, "beta": -3.1, "gamma": -4.2, "delta": -6.5}
    made, scorer, logprobs = score(first, whole, TOKENS)
    gone = Deprecation("deprecated", None, "docstring")
    ranked = made.final(logprobs, {"alpha_one": gone, "alpha_two": gone})
    # Beta's bound led once the alphas were demoted: the names whose bounds beat the
    # best whole score left (the alphas', demoted) were scored, in one more pass.
    assert scorer.passes[1] == ["beta", "gamma", "delta"]
    assert ranked[0].name == "beta" and ranked[0].logprob == -3.1
    assert made.pending == []


def test_no_pass_when_the_favourite_leads_on_a_first_token_of_its_own():
    first = {"beta": -0.2, "gamma": -2.0, "delta": -3.0}
    made, scorer, logprobs = score(first, {}, TOKENS)
    assert scorer.passes == [] and logprobs == first and made.scored == 0


@pytest.mark.parametrize("seed", range(40))
def test_the_winner_is_the_one_scoring_every_shortlisted_name_would_pick(seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(9)]
    tokens = {n: [rng.choice([10, 11, 12, 13, 14]), 20 + i] for i, n in enumerate(names)}
    first = {n: -rng.uniform(0.0, 8.0) for n in names}
    whole = {n: first[n] - rng.expovariate(0.7) for n in names}
    made, scorer, logprobs = score(first, whole, tokens)
    if not scorer.passes:  # the favourite leads on a first token of its own
        return
    exhaustive, _ = ranker(first, tokens)
    shortlist = list(
        dict.fromkeys([*(r.name for r in exhaustive.proxy[:SHORTLIST]), exhaustive.favourite])
    )
    everything = exhaustive.final({n: whole[n] for n in shortlist}, {})
    assert made.final(logprobs, {})[0].name == everything[0].name
    assert sum(len(p) for p in scorer.passes) <= len(shortlist)
