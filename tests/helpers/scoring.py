"""A reference score for candidate names: one uncached forward pass per name.

The engine scores candidates with a token tree over its cache; this is the
plain computation it must agree with (``tests/unit/test_engine.py``) and the
baseline ``bench/score_names.py`` times it against.
"""

from __future__ import annotations

from typing import Any


def whole_logprob(model: Any, prompt: list[int], sequence: list[int], ends: Any) -> float:
    """The log-probability of ``sequence`` then an end, from one pass without a cache."""
    import torch

    with torch.inference_mode():
        logits = model(torch.tensor([prompt + sequence])).logits[0].float()
    logprobs = torch.log_softmax(logits[len(prompt) - 1 :], dim=-1)
    total = sum(float(logprobs[i, token]) for i, token in enumerate(sequence))
    last = logprobs[len(sequence), : len(ends)]
    return total + float(torch.logsumexp(last[ends[: last.shape[-1]]], dim=0))
