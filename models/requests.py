"""What a completion job takes and how it can fail: plain data, no torch import.

The server imports these at startup; torch and transformers load on the model
worker, so ``initialize`` is answered before they are imported.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sampling:
    """Greedy when ``temperature`` is 0."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")


@dataclass(frozen=True)
class CompletionRequest:
    prefix: str  # document text before the cursor (code points)
    suffix: str  # document text after the cursor
    path: str | None = None  # workspace-relative path for the prompt header


@dataclass(frozen=True)
class CompletionOptions:
    max_new_tokens: int = 48
    max_lines: int = 8
    prefix_tokens: int = 1024
    suffix_tokens: int = 256
    sampling: Sampling = Sampling()


class ModelOutOfMemory(Exception):
    """Generation ran out of memory; the cache was dropped and the next request may work."""
