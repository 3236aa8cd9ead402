"""The one contract every steering processor keeps (transformers' ``LogitsProcessor``).

A processor is one constraint: ``__call__(input_ids, scores) -> scores`` with
``input_ids: [1, T]`` (the logical tokens so far, prompt included) and
``scores: [1, V]`` (the next token's logits, maybe narrower or wider than the
vocabulary). It returns new scores (or the same tensor, untouched), never edits
``scores`` in place, and never calls the language server: it receives facts
gathered beforehand (token ids, a candidate trie, the vocabulary's text).
Subclasses validate their ``__init__`` arguments with a ``ValueError`` that
quotes the bad value. Compose them in a list; each reads the previous one's scores.
"""

from __future__ import annotations

import torch


class LogitsProcessor:
    """Base class of the steering processors (see the module docstring).

    :attr:`idle` has one meaning: at the coming step this processor cannot forbid
    a token that a masking candidate walk allows (it changes no score, or only
    scores of tokens outside an identifier's continuations). When every processor
    the decode loop was given is idle, the loop may compute the LM head for the
    walk's candidate rows only (``Steerer.rows``). False unless a subclass says
    otherwise: a processor that may mask anything keeps the full head.
    """

    @property
    def idle(self) -> bool:
        """See the class docstring: this processor cannot forbid a walk's row now."""
        return False

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V] -> [1, V]
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")


def rule_out(ruled_out: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """``scores`` [1, V] with the tokens ruled out at -inf, unless that would leave none
    (a dead end: the model's choice stands). ``ruled_out``: a [V] bool mask, or the
    sorted ids of a set. Scores narrower than the vocabulary drop the ids past them."""
    if ruled_out.dtype == torch.bool:
        width = min(scores.shape[-1], ruled_out.shape[-1])
        out = scores.clone()
        out[:, :width] = out[:, :width].masked_fill(
            ruled_out[:width].to(scores.device), float("-inf")
        )
    else:
        if not len(ruled_out):
            return scores
        if int(ruled_out[-1]) >= scores.shape[-1]:  # sorted: a narrower head
            ruled_out = ruled_out[ruled_out < scores.shape[-1]]
        out = scores.index_fill(1, ruled_out.to(scores.device), float("-inf"))
    if bool(torch.isneginf(out).all()):
        return scores  # everything else was ruled out already: no dead end
    return out
