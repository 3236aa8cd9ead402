"""CommentRuns: no more than ``limit`` comment lines in a row in a multi-line completion.

A vocabulary of eight pieces; the prompt is token 0, generated tokens follow it.
"""

from __future__ import annotations

import pytest
import torch

from steerlsp.models.options import CompletionOptions
from steerlsp.models.steering.processors.comments import CommentRuns, comment_run
from steerlsp.models.steering.tokens.vocab import VocabularyText

# "<eos>", "#", " #", "\n", "\n    #", "x", " =", ":\n"
PIECES = [
    "<eos>",
    "#",
    "\u2581#",
    "\u010a",
    "\u010a\u2581\u2581\u2581\u2581#",
    "x",
    "\u2581=",
    ":\u010a",
]
HASH, SPACE_HASH, NEWLINE, NEWLINE_HASH, X, EQUALS, COLON_NEWLINE = 1, 2, 3, 4, 5, 6, 7


class Pieces:
    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [PIECES[i] for i in ids]


@pytest.fixture
def vocabulary() -> VocabularyText:
    return VocabularyText(Pieces(), len(PIECES))


def forbidden(runs: CommentRuns, generated: list[int]) -> list[int]:
    """The tokens ``runs`` forbids after ``generated`` (its first call sees the prompt)."""
    runs(torch.tensor([[0]]), torch.zeros(1, len(PIECES)))
    scores = runs(torch.tensor([[0, *generated]]), torch.zeros(1, len(PIECES)))
    return torch.isinf(scores[0]).nonzero().flatten().tolist()


def test_the_vocabulary_knows_comment_starts_and_new_comment_lines(vocabulary):
    starts, opens = vocabulary.index.comment_masks
    assert starts.nonzero().flatten().tolist() == [HASH, SPACE_HASH]
    assert opens.nonzero().flatten().tolist() == [NEWLINE_HASH]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", (0, "blank")),
        ("    ", (0, "blank")),
        ("# plan\n    ", (1, "blank")),
        ("# plan\n\n    # more\n    ", (2, "blank")),  # a blank line does not end a run
        ("# plan\n    x = 1\n    ", (0, "blank")),  # code does
        ("# plan\n    # mo", (1, "comment")),
        ("x = 1  # why\n    y", (0, "code")),  # a trailing comment is no comment line
        ("def f():\n    # a\n    # b\n    return", (2, "code")),
    ],
)
def test_comment_run(text, expected):
    assert comment_run(text) == expected


def test_one_comment_line_then_code(vocabulary):
    runs = CommentRuns(vocabulary, "    ", 1)
    assert forbidden(runs, []) == []  # the first comment line is allowed
    # On it, a token that starts the second one is not.
    assert forbidden(runs, [HASH, X]) == [NEWLINE_HASH]
    # At the next line's start, no comment of either kind.
    assert forbidden(runs, [HASH, X, NEWLINE]) == [HASH, SPACE_HASH, NEWLINE_HASH]
    # Code resets the run.
    assert forbidden(runs, [HASH, X, NEWLINE, X, EQUALS, NEWLINE]) == []


def test_a_trailing_comment_is_allowed_and_counts_for_nothing(vocabulary):
    runs = CommentRuns(vocabulary, "", 1)
    assert forbidden(runs, [X, SPACE_HASH, X, NEWLINE]) == []


def test_limit_zero_forbids_every_comment_line_but_not_trailing_comments(vocabulary):
    runs = CommentRuns(vocabulary, "    ", 0)
    assert forbidden(runs, []) == [HASH, SPACE_HASH, NEWLINE_HASH]
    assert forbidden(runs, [X]) == [NEWLINE_HASH]  # " #" after code is a trailing comment


def test_the_cursor_lines_header_starts_the_first_line(vocabulary):
    """After ``def f():`` (the cursor at the header's end) the body's first line is new."""
    runs = CommentRuns(vocabulary, "def f():", 0)
    assert forbidden(runs, []) == [NEWLINE_HASH]
    assert forbidden(runs, [COLON_NEWLINE]) == [HASH, SPACE_HASH, NEWLINE_HASH]


def test_a_rewind_is_followed(vocabulary):
    """The history may shrink (steering rewinds): the run is read from it every step."""
    runs = CommentRuns(vocabulary, "    ", 1)
    assert forbidden(runs, [HASH, X, NEWLINE]) == [HASH, SPACE_HASH, NEWLINE_HASH]
    assert runs(torch.tensor([[0]]), torch.zeros(1, len(PIECES))).isfinite().all()


def test_scores_of_allowed_tokens_are_kept(vocabulary):
    runs = CommentRuns(vocabulary, "    ", 1)
    runs(torch.tensor([[0]]), torch.zeros(1, len(PIECES)))
    scores = torch.arange(len(PIECES), dtype=torch.float).unsqueeze(0)
    out = runs(torch.tensor([[0, HASH, X, NEWLINE]]), scores)
    assert out[0, [X, EQUALS]].tolist() == [float(X), float(EQUALS)]


def test_bad_limits_are_refused(vocabulary):
    with pytest.raises(ValueError, match="limit"):
        CommentRuns(vocabulary, "", -1)
    with pytest.raises(ValueError, match="comment_lines"):
        CompletionOptions(comment_lines=-1)
