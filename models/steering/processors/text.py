"""Steering constraints: one vectorised logits processor per class.

A processor has transformers' shape, ``__call__(input_ids, scores) -> scores``
with ``input_ids: [1, T]`` and ``scores: [1, V]``. It never calls the language
server: it receives facts gathered beforehand (here, the vocabulary's text).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from steerlsp.models.steering.tokens.vocab import VocabularyIndex


class VocabularyText:
    """The text each token id stands for, as far as whitespace is concerned.

    Built once per tokenizer from its token strings (no per-id decode), with
    the SentencePiece and byte-level whitespace markers mapped back, over a
    :class:`VocabularyIndex` so a new string costs a bisect, not a vocabulary scan.
    """

    def __init__(self, tokenizer: Any, size: int) -> None:
        self.index = VocabularyIndex.from_tokenizer(tokenizer, size)
        self.texts = self.index.texts
        self._masks = lru_cache(maxsize=64)(self.index.consistent_mask)

    def consistent_with(self, text: str) -> torch.Tensor:
        """Tokens that start with ``text`` or are a non-empty start of it. -> bool [V]"""
        return self._masks(text)


class TokenHealing:
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
        """Nothing left to heal: the processor changes no more scores."""
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


class CommentRuns:
    """No more than ``limit`` comment lines in a row in a multi-line completion.

    At the start of a body (after a docstring, a ``def`` line) a small model tends
    to plan in comments, one line after another, until the token limit. A
    completion of comments alone holds no complete statement, so the editor got
    nothing: 11 of the task suite's 42 steered completions were empty (1 with the
    limit). Once ``limit`` comment lines follow each other, a line may not start
    with a comment: the model writes the code it was about to describe.

    Counts the generated lines only (a comment the user wrote above the cursor is
    theirs), with ``line_prefix`` (the cursor line's text before the cursor) as the
    first line's start; blank lines neither count nor end a run. A ``#`` at the
    start of a line inside a string counts as a comment: the lexer-free price.

    A pure mask over two index masks computed once per vocabulary: tokens that start
    a comment at a line's start, and tokens that break a line and start one.
    """

    # It masks only tokens holding a ``#`` or a line break, never a row a masking
    # walk restricts a step to (an identifier's continuations): the candidate-row
    # head may run beside it (``Engine._rows``).
    idle = True

    def __init__(self, vocabulary: VocabularyText, line_prefix: str, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"CommentRuns needs a limit >= 0, got {limit!r}")
        self.texts = vocabulary.texts
        starts, opens = vocabulary.index.comment_masks  # [V] bool each
        # What each state forbids, moved to the scores' device once.
        self._forbid = {"line start": starts | opens, "new comment line": opens}
        self.line_prefix = line_prefix
        self.limit = limit
        self._prompt: int | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V]
        if self._prompt is None:
            self._prompt = input_ids.shape[-1]  # first called before any token is taken
        generated = "".join(self.texts[i] for i in input_ids[0, self._prompt :].tolist())
        forbid = self._forbidden(*comment_run(self.line_prefix + generated))
        if forbid is None:
            return scores
        mask = self._forbid[forbid]
        if mask.device != scores.device:
            mask = self._forbid[forbid] = mask.to(scores.device)
        width = min(scores.shape[-1], mask.shape[-1])
        out = scores.clone()
        out[:, :width] = out[:, :width].masked_fill(mask[:width], float("-inf"))
        return out

    def _forbidden(self, run: int, line: str) -> str | None:
        """What to forbid after ``run`` comment lines in a row above a ``line``: a
        comment at the line's start, or a token that starts a new comment line."""
        if line == "blank" and run >= self.limit:
            return "line start"
        if (line == "comment" and run + 1 >= self.limit) or (line == "code" and self.limit == 0):
            return "new comment line"
        return None


def comment_run(text: str) -> tuple[int, str]:
    """The comment lines in a row just above ``text``'s last line (blank lines skipped),
    and what that last line is so far: "blank", "comment" or "code"."""
    *above, last = text.split("\n")
    run = 0
    for line in reversed(above):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        run += 1
    stripped = last.strip()
    kind = "blank" if not stripped else "comment" if stripped.startswith("#") else "code"
    return run, kind
