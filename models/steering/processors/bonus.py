"""A bonus for some tokens: a preference, never a mask."""

from __future__ import annotations

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor


class Bonus(LogitsProcessor):
    """Adds ``bonus`` nats to the logits of ``ids``; every other token keeps its score.
    Ids past a narrower head are dropped; a token listed twice gets the bonus once."""

    def __init__(self, ids: torch.Tensor, bonus: float) -> None:
        if ids.dtype != torch.long or ids.dim() != 1:
            raise ValueError(f"ids must be a 1-D long tensor, got {ids.dtype} {tuple(ids.shape)}")
        if not bonus > 0:
            raise ValueError(f"bonus must be > 0 nats, got {bonus!r}")
        self.ids = torch.unique(ids)
        self.bonus = bonus

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V] -> [1, V]
        ids = self.ids[self.ids < scores.shape[-1]].to(scores.device)
        if not len(ids):
            return scores
        out = scores.clone()
        out[:, ids] += self.bonus
        return out
