"""The completion job's mechanics on a tiny model: cancel, out-of-memory recovery."""

from __future__ import annotations

import pytest

from steerlsp.models.completer import Completer
from steerlsp.models.loading import LoadedModel
from steerlsp.models.requests import CompletionOptions, CompletionRequest, ModelOutOfMemory
from steerlsp.models.worker import CancelToken, JobCancelled
from tests.tiny import CharTokenizer, tiny_model


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
