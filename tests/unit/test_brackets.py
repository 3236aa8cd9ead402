"""Closing brackets that close nothing open are ruled out: the processor on a toy
vocabulary, and the stage in the real decode loop with a scripted model."""

from __future__ import annotations

import pytest
import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.processors.brackets import (
    BracketPrograms,
    UnmatchedClosers,
    bracket_program,
    closes_only_what_is_open,
)
from tests.doubles.analysis import ScriptedAnalysis
from tests.unit.test_steer import Script, inner, one_thread, pool, steered, unsteered

__all__ = ["inner", "one_thread", "pool"]  # the fixtures, shared with test_steer

TEXTS = ["x", ")", "))", ")]", "()", "]", '")', "),", " # )", "}", "("]


def test_a_tokens_program_is_its_brackets_in_code():
    assert [bracket_program(t) for t in TEXTS] == [
        "",
        ")",
        "))",
        ")]",
        "()",
        "]",
        "",  # after a quote: the string's
        ")",
        "",  # a comment's
        "}",
        "",  # opens only: nothing to rule out
    ]
    assert closes_only_what_is_open(")]", "[(")
    assert not closes_only_what_is_open(")]", "([")
    assert closes_only_what_is_open("()", "") and not closes_only_what_is_open(")", "")


@pytest.mark.parametrize(
    ("stack", "ruled_out"),
    [
        ("", {")", "))", ")]", "]", "),", "}"}),
        ("(", {"))", ")]", "]", "}"}),
        ("[(", {"))", "]", "}"}),
        ("((", {")]", "]", "}"}),
        ("{", {")", "))", ")]", "]", "),"}),
    ],
)
def test_the_tokens_ruled_out_by_the_brackets_open(stack, ruled_out):
    programs = BracketPrograms(TEXTS)
    got = {TEXTS[i] for i in programs.ruled_out(stack).tolist()}
    assert got == ruled_out
    scores = torch.zeros(1, len(TEXTS))
    masked = UnmatchedClosers(programs, stack)(torch.zeros(1, 1, dtype=torch.long), scores)
    assert {TEXTS[i] for i in torch.isinf(masked[0]).nonzero().flatten().tolist()} == ruled_out
    assert not torch.isinf(scores).any()  # not edited in place


def test_the_stack_is_validated_and_a_dead_end_is_left_alone():
    programs = BracketPrograms(TEXTS)
    with pytest.raises(ValueError, match="openers"):
        UnmatchedClosers(programs, "(]")
    only_closer = torch.full((1, len(TEXTS)), float("-inf"))
    only_closer[0, 1] = 0.0  # nothing else is allowed: leave it to the model
    out = UnmatchedClosers(programs, "")(torch.zeros(1, 1, dtype=torch.long), only_closer)
    assert torch.equal(out, only_closer)


PROMPT = "def f(a):\n    x = g(a"


def test_an_unmatched_closer_is_not_written(inner, pool):
    script = Script({PROMPT + "))\n": 0.9, PROMPT + ")\n": 0.1})
    assert unsteered(inner, script, PROMPT).text == "))\n"
    run = steered(inner, script, PROMPT, ScriptedAnalysis(), pool)
    assert run.text == ")\n"
    (changed,) = run.trace["changed"]
    assert (changed["before"], changed["after"]) == (")", "\n")
    off = SteeringOptions(brackets=False)
    assert steered(inner, script, PROMPT, ScriptedAnalysis(), pool, options=off).text == "))\n"


def test_closers_inside_strings_are_the_models(inner, pool):
    """(The scripted model cannot write comment lines: hints are comments to it.)"""
    for written in [', "a)")\n', ', "))")\n']:
        script = Script({PROMPT + written: 0.9, PROMPT + ")\n": 0.1})
        assert steered(inner, script, PROMPT, ScriptedAnalysis(), pool).text == written
