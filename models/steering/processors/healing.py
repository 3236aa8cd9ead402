"""Token healing: the first generated tokens re-produce whitespace cut off the prompt."""

from __future__ import annotations

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.tokens.vocab import VocabularyText


class TokenHealing(LogitsProcessor):
    """Makes the first generated tokens re-produce whitespace cut off the prompt.

    A prompt ending in a space (``join(home, ``) sits on a token boundary the
    model rarely saw: it ends the line instead of writing `` 'config'``. The
    completer trims the trailing whitespace and this processor allows, until
    the trimmed text is re-produced, only tokens consistent with the rest of it.
    """

    def __init__(self, vocabulary: VocabularyText, removed: str) -> None:
        if not removed:
            raise ValueError(f"TokenHealing needs the removed text, got {removed!r}")
        self.vocabulary = vocabulary
        self.remaining = removed
        self._seen: int | None = None

    @property
    def idle(self) -> bool:
        """Once nothing is left to heal: the processor changes no more scores."""
        return not self.remaining

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V]
        length = input_ids.shape[-1]
        if self._seen is not None and length > self._seen:
            chosen = self.vocabulary.texts[int(input_ids[0, -1])]
            self.remaining = (
                self.remaining[len(chosen) :] if self.remaining.startswith(chosen) else ""
            )
        self._seen = length
        if not self.remaining:
            return scores
        allowed = self.vocabulary.consistent_with(self.remaining).to(scores.device)
        width = min(scores.shape[-1], allowed.shape[-1])
        masked = torch.full_like(scores, float("-inf"))
        masked[:, :width] = torch.where(allowed[:width], scores[:, :width], masked[:, :width])
        return masked


def split_trailing_space(prompt: str) -> tuple[str, str]:
    """``"f(a, "`` -> ``("f(a,", " ")``: horizontal whitespace after code on the last line."""
    stripped = prompt.rstrip(" \t")
    last_line = stripped.rsplit("\n", 1)[-1]
    if stripped == prompt or not last_line.strip():
        return prompt, ""
    return stripped, prompt[len(stripped) :]
