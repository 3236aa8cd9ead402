"""The Analysis seam: scripted answers, as the decode loop's tests will use them."""

import time

import pytest

from steerlsp.models.steering.analysis import (
    DEFAULT_TIMEOUT,
    Analysis,
    AnalysisTimeout,
    CompletionCandidate,
    DefinitionSource,
    Signature,
)
from tests.doubles.analysis import ScriptedAnalysis

DUMP = CompletionCandidate("model_dump", kind="method", documentation="Generate a dictionary.")
DICT = CompletionCandidate("dict", kind="method", deprecated=True)
TEXT = "user = User(name='a')\nuser."


def test_a_trigger_text_answers_wherever_the_text_before_the_offset_ends_with_it():
    analysis = ScriptedAnalysis(completions={"user.": [DUMP, DICT]})
    assert analysis.completions_at(TEXT, len(TEXT)) == [DUMP, DICT]
    assert analysis.completions_at(TEXT + "\n", len(TEXT)) == [DUMP, DICT]
    assert analysis.completions_at(TEXT, len(TEXT) - 1) == []


def test_an_exact_position_wins_over_a_trigger_and_the_longest_trigger_wins():
    exact = [CompletionCandidate("only_here")]
    analysis = ScriptedAnalysis(
        completions={".": [DICT], "user.": [DUMP], (TEXT, len(TEXT)): exact}
    )
    assert analysis.completions_at(TEXT, len(TEXT)) == exact
    other = "other = 1\nuser."
    assert analysis.completions_at(other, len(other)) == [DUMP]
    assert analysis.completions_at("x.", 2) == [DICT]


def test_signatures_and_definitions_are_scripted_the_same_way():
    sig = Signature("model_dump(self, *, mode='python')", ("mode='python'",), 0)
    where = DefinitionSource("/site-packages/pydantic/main.py", 346)
    analysis = ScriptedAnalysis(signatures={"model_dump(": sig}, definitions={"model_dump": where})
    text = "user.model_dump("
    assert analysis.signature_at(text, len(text)) == sig
    assert analysis.signature_at(text, 5) is None
    assert analysis.definition_source(text, len("user.model_dump")) == where
    assert analysis.definition_source(text, 0) is None


def test_every_question_is_recorded_in_order():
    analysis = ScriptedAnalysis()
    analysis.completions_at("a.", 2)
    analysis.signature_at("f(", 2)
    analysis.definition_source("f", 1)
    assert analysis.calls == [
        ("completions_at", "a.", 2),
        ("signature_at", "f(", 2),
        ("definition_source", "f", 1),
    ]


def test_a_latency_over_the_budget_times_out_after_the_budget():
    analysis = ScriptedAnalysis(completions={".": [DUMP]}, latency=600.0)
    start = time.perf_counter()
    with pytest.raises(AnalysisTimeout):
        analysis.completions_at("a.", 2, timeout=0.02)
    assert time.perf_counter() - start < 60  # not the 600 s latency, however loaded the box


def test_a_latency_within_the_budget_still_answers():
    analysis = ScriptedAnalysis(completions={".": [DUMP]}, latency=0.01)
    assert analysis.completions_at("a.", 2, timeout=DEFAULT_TIMEOUT) == [DUMP]


def test_an_offset_outside_the_text_is_a_programmer_error():
    with pytest.raises(ValueError, match="offset 3"):
        ScriptedAnalysis().completions_at("a.", 3)


def test_answers_are_frozen_values():
    with pytest.raises(AttributeError):
        DUMP.name = "other"  # type: ignore[misc]


def test_the_scripted_analysis_satisfies_the_protocol():
    analysis: Analysis = ScriptedAnalysis()
    assert analysis.completions_at("", 0) == []
