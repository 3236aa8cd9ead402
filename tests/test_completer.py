"""The completion job's mechanics on a tiny model: cancel, out-of-memory recovery."""

from __future__ import annotations

import pytest

from steerlsp.models.completer import Completer
from steerlsp.models.loading import LoadedModel
from steerlsp.models.requests import CompletionOptions, CompletionRequest, ModelOutOfMemory
from steerlsp.models.worker import CancelToken, JobCancelled
from tests.tiny import CharTokenizer, Script, tiny_model


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
