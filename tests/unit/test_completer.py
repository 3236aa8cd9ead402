"""The completion job's mechanics on a tiny model: cancel, out-of-memory recovery."""

from __future__ import annotations

import dataclasses

import pytest

from steerlsp.models.decoding import completer as completer_module
from steerlsp.models.decoding.completer import Completer
from steerlsp.models.decoding.prompting import agrees
from steerlsp.models.decoding.worker import CancelToken, JobCancelled
from steerlsp.models.loading.load import LoadedModel
from steerlsp.models.options import CompletionOptions, CompletionRequest, ModelOutOfMemory
from tests.doubles.tiny import CharTokenizer, Script, tiny_model


@pytest.fixture
def completer() -> Completer:
    model = tiny_model()
    return Completer(LoadedModel(model, CharTokenizer(), model.device, None, "tiny"))


REQUEST = CompletionRequest("def f(x):\n    return ", "\n", "f.py")


def test_a_cancelled_token_raises(completer):
    token = CancelToken()
    token.cancel()
    with pytest.raises(JobCancelled):
        completer.complete(REQUEST, CompletionOptions(max_new_tokens=5), token)


def test_out_of_memory_is_reported_and_the_next_request_works(completer, monkeypatch):
    real = completer.engine.generate
    calls = []

    def once_out_of_memory(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("simulated")
        return real(*args, **kwargs)

    monkeypatch.setattr(completer.engine, "generate", once_out_of_memory)
    with pytest.raises(ModelOutOfMemory, match="simulated"):
        completer.complete(REQUEST, CompletionOptions(max_new_tokens=3), CancelToken())
    done = completer.complete(REQUEST, CompletionOptions(max_new_tokens=3), CancelToken())
    assert done.generation.prompt_tokens > 0 and done.generation.reused_tokens == 0


def test_no_fim_template_for_a_plain_vocabulary(completer):
    assert completer.template is None and completer.stop_ids == frozenset()


def scripted(completer: Completer, monkeypatch, text: str) -> None:
    """Make the completer's model write ``text`` (cycling)."""
    real = completer.engine.generate

    def generate(*args, **kwargs):
        kwargs["processors"] = [*kwargs.get("processors", ()), Script(text)]
        return real(*args, **kwargs)

    monkeypatch.setattr(completer.engine, "generate", generate)


def test_a_looping_model_is_stopped_early_and_its_loop_cut(completer, monkeypatch):
    scripted(completer, monkeypatch, "node(")
    request = CompletionRequest("tree = node(", ")\n", "t.py")
    done = completer.complete(request, CompletionOptions(max_new_tokens=200), CancelToken())
    assert done.generation.stop == "stop" and len(done.generation.token_ids) < 30
    assert done.text == "node"


def test_a_completion_cut_at_the_token_limit_ends_with_a_complete_line(completer, monkeypatch):
    script = "a = 1\n    b = f(x"
    scripted(completer, monkeypatch, script)
    request = CompletionRequest("def f(x):\n    ", "\n", "f.py")
    options = CompletionOptions(max_new_tokens=len(script))
    done = completer.complete(request, options, CancelToken())
    assert done.generation.stop == "max_tokens" and done.generation.text == script
    assert done.text == "a = 1"


def test_column_zero_in_a_body_stops_at_module_level(completer, monkeypatch):
    scripted(completer, monkeypatch, "    return x\n\n\ndef g():\n    pass\n")
    request = CompletionRequest("def f(x):\n    y = x\n", "\n", "f.py")
    done = completer.complete(request, CompletionOptions(max_new_tokens=40), CancelToken())
    assert done.generation.stop == "stop" and done.generation.text.endswith("\nd")
    assert done.text == "    return x"


# ---- alternatives: sampled after the first, distinct, bounded in time --------------


class Clock:
    """The completer's clock in a test: it moves only when a step says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class Slow:
    """A processor that takes ``seconds`` per step of the test's clock (a slow model),
    so budgets are tested by steps, not by how busy the machine is."""

    def __init__(self, seconds: float, clock: Clock) -> None:
        self.seconds = seconds
        self.clock = clock

    def __call__(self, history, scores):
        self.clock.now += self.seconds
        return scores


def by_seed(
    completer: Completer, monkeypatch, scripts: dict, slow: float = 0.0, generations=None
) -> list:
    """The model writes ``scripts[seed]`` (``None``: the greedy run); returns the
    sampling of every generation, in order (and appends each to ``generations``)."""
    real = completer.engine.generate
    calls = []
    clock = Clock()
    if slow:
        monkeypatch.setattr(completer_module, "time", clock)

    def generate(*args, **kwargs):
        sampling = kwargs["sampling"]
        calls.append(sampling)
        extra = [Script(scripts[sampling.seed])] + ([Slow(slow, clock)] if slow else [])
        kwargs["processors"] = [*kwargs.get("processors", ()), *extra]
        generation = real(*args, **kwargs)
        if generations is not None:
            generations.append(generation)
        return generation

    monkeypatch.setattr(completer.engine, "generate", generate)
    return calls


LINE = CompletionRequest("x =", "\n", "f.py")  # single-line: ends at the newline


def test_one_alternative_asked_is_the_first_completion_only(completer, monkeypatch):
    calls = by_seed(completer, monkeypatch, {None: " 1\n"})
    done = completer.complete(LINE, CompletionOptions(max_new_tokens=8), CancelToken())
    assert done.text == " 1" and done.alternatives == ()
    assert [s.seed for s in calls] == [None]


def test_alternatives_are_distinct_non_empty_and_seeded(completer, monkeypatch):
    scripts = {None: " a\n", 1: " a  \n", 2: "\n", 3: " b + 1\n", 4: " c\n"}
    generations: list = []
    calls = by_seed(completer, monkeypatch, scripts, generations=generations)
    options = CompletionOptions(max_new_tokens=8, alternatives=3, alternatives_budget=30)
    done = completer.complete(LINE, options, CancelToken())
    assert done.text == " a"
    # " a  " repeats the first after trimming; "\n" is empty: both dropped.
    assert done.alternatives == (" b + 1", " c")
    assert [s.seed for s in calls] == [None, 1, 2, 3, 4]  # fixed seeds: reproducible
    assert calls[0] == CompletionOptions().sampling  # the first is greedy
    assert all(s.temperature > 0 and s.top_p < 1 for s in calls[1:])
    # The prompt's KV cache is reused: the alternatives cost decode steps only.
    assert all(g.reused_tokens == g.prompt_tokens - 1 for g in generations[1:])


def test_alternatives_stop_when_enough_are_found(completer, monkeypatch):
    scripts = {None: " a\n", 1: " b\n", 2: " c\n", 3: " d\n"}
    calls = by_seed(completer, monkeypatch, scripts)
    options = CompletionOptions(max_new_tokens=8, alternatives=2, alternatives_budget=30)
    assert completer.complete(LINE, options, CancelToken()).alternatives == (" b",)
    assert [s.seed for s in calls] == [None, 1]


def test_alternatives_are_bounded_in_time(completer, monkeypatch):
    scripts = {None: " a\n", **{seed: " bcdefghij\n" for seed in range(1, 5)}}
    calls = by_seed(completer, monkeypatch, scripts, slow=0.02)
    options = CompletionOptions(max_new_tokens=12, alternatives=3, alternatives_budget=0.1)
    done = completer.complete(LINE, options, CancelToken())
    # One draw runs into the budget (10 steps of 20 ms > 100 ms): a half-written
    # line is dropped, and no other draw starts.
    assert done.text == " a" and done.alternatives == ()
    assert len(calls) == 2 and done.alternative_seconds < 0.1 + 0.1
    none = CompletionOptions(max_new_tokens=12, alternatives=3, alternatives_budget=0)
    assert completer.complete(LINE, none, CancelToken()).alternatives == ()


def test_a_block_cut_by_the_budget_keeps_its_complete_lines(completer, monkeypatch):
    block = CompletionRequest("def f(x):\n    ", "\n", "f.py")
    scripts = {None: "return x\n", 1: "y = x\n    z = y + y + y + y\n"}
    by_seed(completer, monkeypatch, scripts, slow=0.02)
    options = CompletionOptions(max_new_tokens=40, alternatives=2, alternatives_budget=0.3)
    done = completer.complete(block, options, CancelToken())
    assert done.text == "return x" and done.alternatives == ("y = x",)


def test_cancelling_during_the_alternatives_cancels_the_job(completer, monkeypatch):
    token = CancelToken()
    real = completer.engine.generate

    def generate(*args, **kwargs):
        seed = kwargs["sampling"].seed
        if seed == 1:
            token.cancel()  # an edit or a newer request while the first alternative runs
        kwargs["processors"] = [*kwargs.get("processors", ()), Script(" a\n" if seed else " b\n")]
        return real(*args, **kwargs)

    monkeypatch.setattr(completer.engine, "generate", generate)
    options = CompletionOptions(max_new_tokens=8, alternatives=3, alternatives_budget=30)
    with pytest.raises(JobCancelled):
        completer.complete(LINE, options, token)


@pytest.mark.parametrize(("alternatives", "budget"), [(0, 1.0), (-1, 1.0), (3, -0.5)])
def test_completion_options_reject_bad_alternatives(alternatives, budget):
    with pytest.raises(ValueError, match=str(alternatives if alternatives < 1 else budget)):
        CompletionOptions(alternatives=alternatives, alternatives_budget=budget)


# ---- following the typing: a generation that stops agreeing is abandoned ------------


def test_agrees_when_one_text_begins_the_other():
    assert agrees("foo(1)", "fo") and agrees("fo", "foo(1)") and agrees("", "x")
    assert not agrees("foo(1)", "fa")


def test_a_generation_that_stops_agreeing_with_the_typing_is_abandoned(completer, monkeypatch):
    generations: list = []
    by_seed(completer, monkeypatch, {None: " abcdefgh\n"}, generations=generations)
    typed = [" ab"]
    request = dataclasses.replace(LINE, typed=lambda: typed[0])
    options = CompletionOptions(max_new_tokens=12)
    assert completer.complete(request, options, CancelToken()).text == " abcdefgh"
    typed[0] = " abx"  # the user typed on, away from what the model writes
    with pytest.raises(JobCancelled):
        completer.complete(request, options, CancelToken())
    assert generations[-1].text == " abc"  # stopped at the first token that disagrees


def test_the_healed_whitespace_leads_what_the_typing_must_agree_with(completer, monkeypatch):
    by_seed(completer, monkeypatch, {None: " 1 + 2\n"})
    request = CompletionRequest("x = ", "\n", "f.py", typed=lambda: "1 +")  # prompt ends "x ="
    done = completer.complete(request, CompletionOptions(max_new_tokens=12), CancelToken())
    assert done.text == "1 + 2"


def test_steering_is_prepared_before_the_first_completion(completer):
    """What the first steered completion would build is built at load: the shared
    facts and the vocabulary's tables, agreeing with the lazy ones."""
    index = completer.vocabulary.index
    assert completer._facts is None and index._break_mask is None
    completer.prepare_steering()
    facts = completer._facts
    assert facts is not None and facts._brackets is not None and facts._comments is not None
    assert index._break_mask is not None and index._comments is not None
    ends = [
        i
        for i, text in enumerate(index.texts)
        if text and not (text[0].isalnum() or text[0] == "_")
    ]
    assert index._break_mask.nonzero().flatten().tolist() == ends
    completer.prepare_steering()  # again: nothing rebuilt
    assert completer._facts is facts
