"""Comment tokens held back while a hint comment is in the cache (``stages/hints.py``)."""

from __future__ import annotations

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor


class SuppressComments(LogitsProcessor):
    """Pushes comment-starting tokens below every other valid one while a hint is shown,
    so the model does not continue the hint's comment style."""

    def __init__(self, token_ids: torch.Tensor) -> None:
        if token_ids.dim() != 1 or token_ids.dtype != torch.long:
            raise ValueError(
                f"SuppressComments token_ids must be a 1-D long tensor, got {token_ids!r}"
            )
        self.token_ids = token_ids

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V]
        ids = self.token_ids[self.token_ids < scores.shape[-1]].to(scores.device)
        if not len(ids):
            return scores
        out = scores.clone()
        out[:, ids] = float("-inf")
        return out if bool(torch.isfinite(out).any()) else scores
