"""Steering processors on a vocabulary of five with uniform scores."""

from __future__ import annotations

import random

import pytest
import torch

from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.processors.healing import TokenHealing, split_trailing_space
from steerlsp.models.steering.processors.suppress import SuppressComments
from steerlsp.models.steering.tokens.vocab import VocabularyText


class FiveTokens:
    pieces = ["<eos>", "\u2581", "\u2581\u2581", "\u2581config", "x"]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.pieces[i] for i in ids]


@pytest.fixture
def vocabulary() -> VocabularyText:
    return VocabularyText(FiveTokens(), 5)


def allowed(scores: torch.Tensor) -> list[int]:
    return torch.isfinite(scores[0]).nonzero().flatten().tolist()


def test_vocabulary_maps_whitespace_markers(vocabulary):
    assert vocabulary.texts == ["<eos>", " ", "  ", " config", "x"]
    assert vocabulary.consistent_with(" ").tolist() == [False, True, True, True, False]


def test_consistent_with_equals_the_brute_force_definition_on_a_random_vocabulary():
    rng = random.Random(3)
    pieces = [
        "".join(rng.choice("\u2581ab_(") for _ in range(rng.randint(0, 4))) for _ in range(400)
    ]

    class Random:
        def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
            return [pieces[i] for i in ids]

    vocabulary = VocabularyText(Random(), len(pieces))
    for text in ["", " ", "a", " a", "ab_", "(", "_(a", "  b(", "zzz", *pieces[:40]]:
        brute = [bool(t) and (t.startswith(text) or text.startswith(t)) for t in vocabulary.texts]
        assert vocabulary.consistent_with(text).tolist() == brute, text


def test_healing_allows_only_tokens_consistent_with_the_removed_text(vocabulary):
    healing = TokenHealing(vocabulary, " ")
    scores = healing(torch.tensor([[4, 4]]), torch.zeros(1, 5))
    assert allowed(scores) == [1, 2, 3]


def test_healing_follows_the_chosen_tokens_then_lets_go(vocabulary):
    healing = TokenHealing(vocabulary, "  ")  # two spaces cut off the prompt
    assert allowed(healing(torch.tensor([[4]]), torch.zeros(1, 5))) == [1, 2]
    # The model chose " " (id 1): one space is still owed.
    assert allowed(healing(torch.tensor([[4, 1]]), torch.zeros(1, 5))) == [1, 2, 3]
    # Then " config": healed; everything is allowed again.
    assert allowed(healing(torch.tensor([[4, 1, 3]]), torch.zeros(1, 5))) == [0, 1, 2, 3, 4]


def test_healing_keeps_relative_scores(vocabulary):
    scores = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0]])
    out = TokenHealing(vocabulary, " ")(torch.tensor([[4]]), scores)
    assert out[0, 1:4].tolist() == [1.0, 2.0, 3.0]


def test_healing_needs_text(vocabulary):
    with pytest.raises(ValueError, match="''"):
        TokenHealing(vocabulary, "")


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("f(a, ", ("f(a,", " ")),
        ("x =\t ", ("x =", "\t ")),
        ("for x in y:\n    ", ("for x in y:\n    ", "")),  # indentation is not healed
        ("done", ("done", "")),
        ("", ("", "")),
    ],
)
def test_split_trailing_space(prompt, expected):
    assert split_trailing_space(prompt) == expected


def test_idle_means_the_processor_cannot_forbid_a_walks_row(vocabulary):
    assert LogitsProcessor().idle is False  # the default: it may mask anything
    healing = TokenHealing(vocabulary, " ")
    healing(torch.tensor([[4]]), torch.zeros(1, 5))
    assert not healing.idle  # it still allows only whitespace-consistent tokens
    healing(torch.tensor([[4, 1]]), torch.zeros(1, 5))  # the model wrote " "
    assert healing.idle  # healed: it changes no score


def test_suppress_comments_forbids_its_ids_unless_nothing_would_be_left():
    suppress = SuppressComments(torch.tensor([1, 3], dtype=torch.long))
    scores = torch.zeros(1, 5)
    assert allowed(suppress(torch.zeros(1, 2, dtype=torch.long), scores)) == [0, 2, 4]
    only = torch.full((1, 5), float("-inf"))
    only[0, 1] = 0.0
    assert allowed(suppress(torch.zeros(1, 2, dtype=torch.long), only)) == [1]


def test_suppress_comments_needs_token_ids():
    with pytest.raises(ValueError, match="1-D long"):
        SuppressComments(torch.tensor([[1]]))
