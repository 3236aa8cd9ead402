"""A limit on comment lines in a row in a multi-line completion."""

from __future__ import annotations

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.tokens.vocab import VocabularyText


class CommentRuns(LogitsProcessor):
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

    @property
    def idle(self) -> bool:
        """Always: it masks only tokens holding a ``#`` or a line break, never an
        identifier's continuation (the rows a masking walk restricts a step to)."""
        return True

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
