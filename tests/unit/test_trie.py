"""The candidate trie on a twenty-token vocabulary (tests/doubles/toyvocab.py)."""

from __future__ import annotations

import pytest

from steerlsp.models.steering.tokens.trie import CandidateTrie, Spelling, spell_in_context
from tests.doubles.toyvocab import ID, VOCABULARY, tokenize, with_dummy_prefix


def trie_after(context: str, *candidates: str, tokenizer=tokenize) -> CandidateTrie:
    return CandidateTrie.in_context(
        candidates, context=context, tokenize=tokenizer, vocabulary=VOCABULARY
    )


def ids(*texts: str) -> list[int]:
    return [ID[t] for t in texts]


def test_a_clean_extension_is_spelled_with_the_tokenizers_own_tokens():
    spelling = spell_in_context("updates", context="obj.", tokenize=tokenize, vocabulary=VOCABULARY)
    assert spelling == Spelling("updates", tuple(ids("update", "s")), 0, canonical=True)


def test_a_merged_boundary_token_is_spelled_from_the_boundary_with_its_rollback():
    # obj._private is obj ._ private: the "." already written would have to become "._".
    spelling = spell_in_context(
        "_private", context="obj.", tokenize=tokenize, vocabulary=VOCABULARY
    )
    assert spelling == Spelling("_private", tuple(ids("_", "private")), 1, canonical=False)


def test_a_dummy_prefix_falls_back_to_the_longest_vocabulary_match():
    spelling = spell_in_context(
        "_private", context="obj.", tokenize=with_dummy_prefix, vocabulary=VOCABULARY
    )
    assert spelling is not None
    assert spelling.tokens == tuple(ids("_", "private"))
    assert spelling.rollback == 1


def test_a_candidate_the_vocabulary_cannot_spell_is_dropped():
    trie = trie_after("obj.", "name", "zzz", "")
    assert list(trie.spellings) == ["name"]
    assert trie.dropped == ["zzz", ""]


def test_prefix_case_update_and_updates_are_both_reachable():
    trie = trie_after("obj.", "update", "updates", "name")
    assert trie.allowed_next([]).tolist() == ids("update", "name")
    assert not trie.ends_here([])
    after_update = ids("update")
    assert trie.ends_here(after_update)
    assert trie.completed(after_update) == ["update"]
    assert trie.allowed_next(after_update).tolist() == ids("s")
    assert trie.contains(after_update) and trie.contains(ids("update", "s"))
    assert trie.completed(ids("update", "s")) == ["updates"]
    assert trie.allowed_next(ids("update", "s")).tolist() == []


def test_leaving_the_trie():
    trie = trie_after("obj.", "update", "name")
    assert not trie.contains(ids("up"))
    assert trie.allowed_next(ids("up")).tolist() == []
    assert not trie.ends_here(ids("up"))
    assert trie.completed(ids("up", "date")) == []
    assert not trie.contains(ids("x")) and trie.completed(ids("x")) == []


def test_a_token_that_finishes_a_candidate_and_goes_past_its_end():
    # "x_(": the token "_(" writes the rest of "x_" and the call's parenthesis.
    trie = trie_after("obj.", "x_")
    assert trie.allowed_next(ids("x")).tolist() == ids("_", "_(")
    assert not trie.contains(ids("x", "_("))
    assert trie.completed(ids("x", "_(")) == ["x_"]
    assert trie.completed(ids("x", "(")) == []


def test_leading_only_to_spares_tokens_shared_with_a_valid_name():
    trie = trie_after("obj.", "update", "updates", "name", "dump")
    assert trie.leading_only_to([], ["name"]).tolist() == ids("name")
    # "update" also leads to "updates": demoting "update" must not demote its first token.
    assert trie.leading_only_to([], ["update"]).tolist() == []
    assert trie.leading_only_to([], ["update", "updates"]).tolist() == ids("update")
    assert trie.leading_only_to(ids("x"), ["name"]).tolist() == []


def test_duplicates_are_kept_once_and_the_length_counts_candidates():
    trie = trie_after("obj.", "name", "name", "items")
    assert len(trie) == 2


def test_per_node_tensors_are_cached():
    trie = trie_after("obj.", "update", "updates")
    assert trie.allowed_next(ids("update")) is trie.allowed_next(ids("update"))


@pytest.mark.parametrize("consumed", [[], [999], [-1]])
def test_unknown_ids_are_off_the_trie_or_the_root(consumed):
    trie = trie_after("obj.", "name")
    assert trie.contains(consumed) == (consumed == [])
