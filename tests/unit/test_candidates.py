"""Candidate processors on a twenty-token vocabulary, uniform scores (tests/doubles/toyvocab.py)."""

from __future__ import annotations

import math

import pytest
import torch

from steerlsp.models.steering.processors.candidates import (
    CandidateWalk,
    Demote,
    FollowByKind,
    WalkState,
)
from steerlsp.models.steering.tokens.trie import CandidateTrie
from tests.doubles.toyvocab import ID, TEXTS, VOCABULARY, tokenize

V = len(TEXTS)
PROMPT = [ID["obj"], ID["."]]  # the trigger: "obj."
# Tokens whose text starts with a character that cannot continue an identifier.
BREAKS = [ID[t] for t in ("<eos>", ".", "._", "(", "()", " ", "\n", ")")]


def trie_after(context: str, *candidates: str) -> CandidateTrie:
    return CandidateTrie.in_context(
        candidates, context=context, tokenize=tokenize, vocabulary=VOCABULARY
    )


def written(*texts: str) -> torch.Tensor:
    return torch.tensor([PROMPT + [ID[t] for t in texts]])


def uniform() -> torch.Tensor:
    return torch.zeros(1, V)


def boosted(scores: torch.Tensor) -> list[int]:
    return (scores[0] > 0).nonzero().flatten().tolist()


def allowed(scores: torch.Tensor) -> list[int]:
    return torch.isfinite(scores[0]).nonzero().flatten().tolist()


def ids(*texts: str) -> list[int]:
    return sorted(ID[t] for t in texts)


@pytest.fixture
def update_trie() -> CandidateTrie:
    return trie_after("obj.", "update", "updates", "name")


# CandidateWalk


def test_walk_boosts_the_first_tokens_of_the_candidates_by_delta(update_trie):
    out = CandidateWalk(update_trie)(written(), uniform())
    assert boosted(out) == ids("update", "name")
    assert out[0, ID["name"]] == 7.0
    assert out[0, ID["x"]] == 0.0


def test_walk_in_mask_mode_allows_only_the_candidates(update_trie):
    out = CandidateWalk(update_trie, mode="mask")(written(), uniform())
    assert allowed(out) == ids("update", "name")


def test_walk_prefix_case_update_can_end_or_grow_into_updates(update_trie):
    walk = CandidateWalk(update_trie, mode="mask")
    walk(written(), uniform())
    out = walk(written("update"), uniform())
    # "s" continues to "updates"; a token that ends the identifier chooses "update".
    assert allowed(out) == sorted([ID["s"], *BREAKS])
    assert walk.state is WalkState.WALKING
    assert allowed(walk(written("update", "s"), uniform())) == sorted(BREAKS)
    assert walk(written("update", "s", "\n"), uniform()).equal(uniform())
    assert walk.state is WalkState.ENDED
    assert walk.chosen == ["updates"]


def test_walk_ends_at_the_shorter_name_when_the_model_ends_it(update_trie):
    walk = CandidateWalk(update_trie)
    walk(written(), uniform())
    walk(written("update"), uniform())
    scores = torch.randn(1, V)
    assert walk(written("update", "("), scores) is scores
    assert (walk.state, walk.chosen) == (WalkState.ENDED, ["update"])


def test_walk_lets_go_once_the_model_leaves_the_trie(update_trie):
    walk = CandidateWalk(update_trie)
    walk(written(), uniform())
    scores = uniform()
    assert walk(written("up"), scores) is scores  # "up" "date" is not the trie's spelling
    assert walk.state is WalkState.LEFT
    assert walk(written("up", "date"), uniform()).equal(uniform())


def test_walk_does_not_end_a_name_that_is_not_finished(update_trie):
    walk = CandidateWalk(update_trie)
    walk(written(), uniform())
    walk(written("name", "("), uniform())
    assert (walk.state, walk.chosen) == (WalkState.ENDED, ["name"])
    walk = CandidateWalk(trie_after("obj.", "updates"))
    walk(written(), uniform())
    walk(written("update", "("), uniform())
    assert walk.state is WalkState.LEFT  # "update(" is not a candidate


def test_walk_escapes_when_the_model_is_far_surer_of_another_token(update_trie):
    walk = CandidateWalk(update_trie, escape_margin=5.0)
    scores = uniform()
    scores[0, ID["x"]] = 10.0  # e^10 times likelier than any candidate
    assert walk(written(), scores).equal(scores)
    assert walk.escapes == 1
    scores[0, ID["x"]] = 3.0  # only e^3: the candidates are boosted past it
    out = walk(written(), scores)
    assert out.argmax() in ids("update", "name")
    assert walk.escapes == 1


def test_walk_never_escapes_with_an_infinite_margin_or_in_mask_mode(update_trie):
    scores = uniform()
    scores[0, ID["x"]] = 50.0
    out = CandidateWalk(update_trie, escape_margin=math.inf)(written(), scores)
    assert boosted(out) != [ID["x"]] and out[0, ID["name"]] == 7.0
    out = CandidateWalk(update_trie, mode="mask")(written(), scores)
    assert allowed(out) == ids("update", "name")


def test_walk_over_a_merged_boundary_token_spells_from_the_boundary():
    # "obj._private" tokenizes as obj ._ private, but "obj." is already written.
    trie = trie_after("obj.", "_private", "name")
    assert trie.spellings["_private"].rollback == 1
    walk = CandidateWalk(trie, mode="mask")
    assert allowed(walk(written(), uniform())) == ids("_", "name")
    assert allowed(walk(written("_"), uniform())) == ids("private")
    walk(written("_", "private", " "), uniform())
    assert walk.chosen == ["_private"]


def test_walk_accepts_a_token_that_jumps_over_the_end_of_a_name():
    walk = CandidateWalk(trie_after("obj.", "x_"), mode="mask")
    walk(written(), uniform())
    assert allowed(walk(written("x"), uniform())) == ids("_", "_(")
    walk(written("x", "_("), uniform())
    assert (walk.state, walk.chosen) == (WalkState.ENDED, ["x_"])


def test_walk_in_mask_mode_never_leaves_no_token_at_all(update_trie):
    scores = torch.full((1, V), float("-inf"))
    scores[0, ID["x"]] = 0.0  # an earlier processor allowed only a non-candidate
    assert CandidateWalk(update_trie, mode="mask")(written(), scores).equal(scores)


def test_walk_counts_from_an_explicit_start(update_trie):
    walk = CandidateWalk(update_trie, mode="mask", start=2)
    assert allowed(walk(written("update"), uniform())) == sorted([ID["s"], *BREAKS])


def test_walk_handles_scores_wider_or_narrower_than_the_vocabulary(update_trie):
    wide = CandidateWalk(update_trie, mode="mask")(written(), torch.zeros(1, V + 4))
    assert allowed(wide) == ids("update", "name")
    narrow = CandidateWalk(update_trie, mode="mask")(written(), torch.zeros(1, ID["name"]))
    assert allowed(narrow) == [ID["update"]]


def test_walk_keeps_relative_scores_among_candidates(update_trie):
    scores = torch.arange(V, dtype=torch.float).unsqueeze(0)
    out = CandidateWalk(update_trie, mode="mask")(written(), scores)
    assert out[0, ID["update"]] == ID["update"] and out[0, ID["name"]] == ID["name"]


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"mode": "hard"}, "'hard'"),
        ({"delta": 0.0}, "0.0"),
        ({"delta": math.inf}, "inf"),
        ({"escape_margin": -1.0}, "-1.0"),
        ({"start": -2}, "-2"),
    ],
)
def test_walk_validates_its_settings(update_trie, kwargs, bad):
    with pytest.raises(ValueError, match=bad):
        CandidateWalk(update_trie, **kwargs)


def test_walk_needs_candidates():
    with pytest.raises(ValueError, match="0"):
        CandidateWalk(trie_after("obj.", "zzz"))


# Demote


def test_demote_pushes_ids_below_the_lowest_valid_score():
    out = Demote(torch.tensor([ID["update"]]))(written(), uniform())
    assert out[0, ID["update"]] == -1.0
    assert (out[0, : ID["update"]] == 0).all()


def test_demote_stays_above_masked_tokens_and_below_allowed_ones(update_trie):
    masked = CandidateWalk(update_trie, mode="mask")(written(), torch.randn(1, V))
    out = Demote(torch.tensor([ID["update"]]))(written(), masked)
    assert allowed(out) == ids("update", "name")
    assert out[0, ID["update"]] < out[0, ID["name"]]


def test_demote_among_ranks_last_among_the_candidates_only():
    scores = torch.arange(V, dtype=torch.float).unsqueeze(0)
    among = torch.tensor([ID["update"], ID["name"], ID["dump"]])
    out = Demote(torch.tensor([ID["dump"]]), among=among, margin=0.5)(written(), scores)
    assert out[0, ID["dump"]] == ID["update"] - 0.5
    assert out[0, ID["<eos>"]] == 0.0  # unrelated tokens are left where they were


def test_demote_leaves_scores_alone_when_nothing_else_is_valid():
    scores = torch.full((1, V), float("-inf"))
    scores[0, ID["update"]] = 1.0
    assert Demote(torch.tensor([ID["update"]]))(written(), scores).equal(scores)


def test_demote_acts_for_the_given_number_of_steps():
    demote = Demote(torch.tensor([ID["name"]]), steps=1)
    assert demote(written(), uniform())[0, ID["name"]] < 0
    assert demote(written("x"), uniform()).equal(uniform())


@pytest.mark.parametrize(
    ("args", "kwargs", "bad"),
    [
        ((torch.tensor([[1]]),), {}, "1-D"),
        ((torch.tensor([1.0]),), {}, "1-D"),
        ((torch.tensor([-3]),), {}, "-3"),
        ((torch.tensor([1]),), {"margin": 0.0}, "0.0"),
        ((torch.tensor([1]),), {"steps": 0}, "0"),
    ],
)
def test_demote_validates_its_settings(args, kwargs, bad):
    with pytest.raises(ValueError, match=bad):
        Demote(*args, **kwargs)


# FollowByKind


@pytest.fixture
def follow(update_trie) -> FollowByKind:
    return FollowByKind(update_trie, {"update": "method", "updates": "property", "name": "class"})


def test_a_method_is_followed_by_a_parenthesis(follow):
    follow(written(), uniform())
    out = follow(written("update"), uniform())
    assert boosted(out) == ids("(", "()")


def test_a_property_is_not_called(follow):
    follow(written(), uniform())
    out = follow(written("update", "s"), uniform())
    assert out[0, ID["("]] < 0 and out[0, ID["()"]] < 0
    assert out[0, ID["."]] == 0.0


def test_follow_by_kind_leaves_other_kinds_and_unfinished_names_alone(follow):
    assert follow(written(), uniform()).equal(uniform())
    assert follow(written("name"), uniform()).equal(uniform())


def test_follow_by_kind_is_done_once_the_name_has_ended(follow):
    follow(written(), uniform())
    follow(written("update", "s"), uniform())
    assert follow(written("update", "s", "("), uniform()).equal(uniform())
    assert follow.done


def test_follow_by_kind_demotes_within_a_mask(update_trie, follow):
    walk = CandidateWalk(update_trie, mode="mask")
    for step in [(), ("update",), ("update", "s")]:
        scores = follow(written(*step), walk(written(*step), uniform()))
    assert allowed(scores) == sorted(BREAKS)  # "(" still possible ...
    assert scores[0, ID["("]] < scores[0, ID["."]]  # ... but last


def test_follow_by_kind_validates_its_settings(update_trie):
    with pytest.raises(ValueError, match="'thing'"):
        FollowByKind(update_trie, {"update": "thing"})
    with pytest.raises(ValueError, match=r"-1\.0"):
        FollowByKind(update_trie, {}, delta=-1.0)


def test_next_rows_lists_what_a_masking_walk_will_allow_mid_name():
    walk = CandidateWalk(trie_after("obj.", "updates", "name"), mode="mask")
    assert walk.next_rows(written()) is None  # not started: nothing known yet
    walk(written(), uniform())
    rows = walk.next_rows(written("update"))
    assert rows is not None and ID["s"] in rows.tolist()
    step = walk(written("update"), uniform())
    assert set(allowed(step)) <= set(rows.tolist())  # the rows hold all it allows
    assert walk.next_rows(written("update", "s")) is None  # a name ends: too many to list
    assert walk.next_rows(written("x")) is None  # off the trie: it will not mask
    boost = CandidateWalk(trie_after("obj.", "updates", "name"))
    boost(written(), uniform())
    assert boost.next_rows(written("update")) is None


def test_draft_is_the_rest_of_the_first_candidate_the_walk_is_still_on():
    walk = CandidateWalk(trie_after("obj.", "updates", "name"), mode="mask")
    assert walk.draft(written()) == []  # not started: where it starts is not known yet
    walk(written(), uniform())
    # best first: the trie's order is the order the candidates were given in
    assert walk.draft(written()) == [ID["update"], ID["s"]]
    assert walk.draft(written("update")) == [ID["s"]]
    assert walk.draft(written("update", "s")) == []  # spelled in full: the end is the model's
    assert walk.draft(written("up")) == []  # on no candidate's spelling
    ranked = CandidateWalk(trie_after("obj.", "name", "updates"))
    ranked(written(), uniform())
    assert ranked.draft(written()) == [ID["name"]]
    walk(written("x"), uniform())  # off the trie: the walk is over
    assert walk.state is WalkState.LEFT and walk.draft(written("update")) == []
