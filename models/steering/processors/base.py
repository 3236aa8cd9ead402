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
