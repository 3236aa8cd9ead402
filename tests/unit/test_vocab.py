"""The vocabulary prefix index on small vocabularies, checked against brute force."""

from __future__ import annotations

import random

import pytest
import torch

from steerlsp.models.steering.tokens.vocab import VocabularyIndex, is_identifier_char, token_texts

TEXTS = ["<eos>", "", " ", "up", "update", "updates", "s", "(", "()", " up", "update", "\U0010ffff"]


@pytest.fixture
def index() -> VocabularyIndex:
    return VocabularyIndex(TEXTS)


def brute_starting_with(texts: list[str], s: str) -> list[int]:
    return [i for i, t in enumerate(texts) if t and t.startswith(s)]


def brute_consistent(texts: list[str], s: str) -> list[int]:
    return [i for i, t in enumerate(texts) if t and (t.startswith(s) or s.startswith(t))]


def test_ids_of_returns_every_id_with_that_text(index):
    assert index.ids_of("update") == (4, 10)
    assert index.ids_of("missing") == ()
    assert index.ids_of("") == ()  # empty texts are never tokens


def test_ids_starting_with_is_a_prefix_range(index):
    assert sorted(index.ids_starting_with("up").tolist()) == [3, 4, 5, 10]
    assert sorted(index.ids_starting_with("update").tolist()) == [4, 5, 10]
    assert index.ids_starting_with("updated").tolist() == []
    assert index.texts_starting_with("upd") == ["update", "update", "updates"]


def test_empty_text_matches_every_non_empty_token(index):
    assert sorted(index.ids_starting_with("").tolist()) == [0, *range(2, len(TEXTS))]


def test_the_highest_code_point_has_no_successor(index):
    assert index.ids_starting_with("\U0010ffff").tolist() == [11]


def test_ids_prefixing_looks_up_each_prefix(index):
    assert index.ids_prefixing("updates()").tolist() == [3, 4, 10, 5]
    assert index.ids_prefixing("").tolist() == []
    assert index.ids_prefixing("x").dtype == torch.long


def test_consistent_with_is_the_union_without_duplicates(index):
    assert index.consistent_with("update").tolist() == [3, 4, 5, 10]
    assert index.consistent_with("(").tolist() == [7, 8]


def test_consistent_mask_matches_the_ids(index):
    mask = index.consistent_mask("updates")
    assert mask.shape == (len(TEXTS),)
    assert mask.nonzero().flatten().tolist() == [3, 4, 5, 10]


def test_identifier_breaks_are_tokens_starting_with_a_non_identifier_char(index):
    assert index.identifier_breaks.tolist() == [0, 2, 7, 8, 9, 11]
    assert index.breaks_identifier(7)
    assert not index.breaks_identifier(4)
    assert not index.breaks_identifier(1)  # empty text
    assert not index.breaks_identifier(999)


def test_is_identifier_char():
    assert all(is_identifier_char(c) for c in "aZ_9é")
    assert not any(is_identifier_char(c) for c in " .(\n-")


def test_token_texts_maps_whitespace_markers():
    class Pieces:
        def convert_ids_to_tokens(self, ids: list[int]) -> list[str | None]:
            return ["\u2581foo", "\u0120bar", "\u010a", "\u0109x", None][: len(ids)]

    assert token_texts(Pieces(), 5) == [" foo", " bar", "\n", "\tx", ""]


def test_random_vocabulary_matches_brute_force():
    rng = random.Random(7)
    alphabet = "ab_( ."
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) for _ in range(300)]
    index = VocabularyIndex(texts)
    queries = {"", *("".join(rng.choice(alphabet) for _ in range(n)) for n in range(1, 7))}
    queries |= {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(200)}
    for s in queries:
        assert sorted(index.ids_starting_with(s).tolist()) == brute_starting_with(texts, s), s
        assert index.consistent_with(s).tolist() == brute_consistent(texts, s), s
        expected = torch.zeros(len(texts), dtype=torch.bool)
        expected[brute_consistent(texts, s)] = True
        assert torch.equal(index.consistent_mask(s), expected), s
