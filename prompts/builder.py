"""Build the model prompt from the text around the cursor.

Conventions:

* ``prefix`` is the document text before the cursor and ``suffix`` the text after it,
  as Python ``str`` (lengths and offsets count code points, not UTF-16 units).
* Lines end at ``"\\n"``; a ``"\\r\\n"`` keeps its ``"\\r"`` on the line.
* Budgets are token counts measured by the injected ``count_tokens``, a tokenizer's
  ``len(encode(text, add_special_tokens=False))`` (a BOS per call would be counted once
  per line). They cover the document text only; markers and the path header come on top.
  A text is measured as the sum of its lines' counts: tokens seldom span a line break, so
  this matches or slightly over-estimates the count of the whole.
* The prompt keeps the prefix verbatim up to the cursor, indentation of an empty cursor
  line included: the model continues from exactly where the cursor is (see
  ``postprocess`` for how its output is inserted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from steerlsp.prompts.context import with_context
from steerlsp.prompts.fim import FimTemplate

CountTokens = Callable[[str], int]

# No tokenizer we know has tokens longer than this many code points (the longest are
# whitespace runs). It bounds how much text can possibly fit a budget, so that a huge line
# is rejected without tokenizing it.
MAX_CHARS_PER_TOKEN = 32


@dataclass(frozen=True)
class Prompt:
    """A prompt ready to tokenize.

    ``prefix_chars`` is how many code points at the end of the prefix the prompt holds
    (``prefix[len(prefix) - prefix_chars:]``); ``suffix_used`` says whether any suffix
    text went in; ``template`` names the FIM template, or is None for prefix-only.
    """

    text: str
    prefix_chars: int
    suffix_used: bool
    template: str | None


def build_prompt(
    prefix: str,
    suffix: str,
    *,
    path: str | None,
    template: FimTemplate | None,
    count_tokens: CountTokens,
    prefix_budget: int,
    suffix_budget: int,
    context: str = "",
    anchor: int | None = None,
) -> Prompt:
    """The prompt for a completion at the cursor between ``prefix`` and ``suffix``.

    Without a template (prefix-only models) the prompt is a ``# path: ...`` comment line
    (when ``path`` is given) followed by the end of the prefix; the suffix is unused.
    With a template it is the template's FIM layout around the end of the prefix and the
    start of the suffix. Either part is cut at a line boundary to fit its budget; only
    when not even the line next to the cursor fits is that line cut mid-line.
    ``context``: comment lines (``prompts/context.py``) put above the function that
    encloses the cursor, on top of the prefix budget; ``prefix_chars`` counts the
    document's code only. ``anchor``: where the previous prompt for this document
    started in ``prefix`` (see :func:`anchored_tail`). Raises ValueError for a negative
    budget.
    """
    for name, budget in (("prefix_budget", prefix_budget), ("suffix_budget", suffix_budget)):
        if budget < 0:
            raise ValueError(f"{name} must be >= 0, got {budget!r}")
    kept_prefix = anchored_tail(prefix, prefix_budget, count_tokens, anchor)
    code = with_context(kept_prefix, context)
    if template is None:
        text = path_comment(path) + code
        return Prompt(text, len(kept_prefix), suffix_used=False, template=None)
    kept_suffix = suffix_head(suffix, suffix_budget, count_tokens)
    if template.file_header is not None and path is not None:
        header, in_prefix = template.file_header.replace("{path}", _one_line(path)), ""
    else:
        header, in_prefix = "", path_comment(path)
    text = "".join(
        (
            header,
            template.prefix_marker,
            in_prefix,
            code,
            template.suffix_marker,
            kept_suffix,
            template.middle_marker,
        )
    )
    return Prompt(text, len(kept_prefix), suffix_used=bool(kept_suffix), template=template.name)


def path_comment(path: str | None) -> str:
    """The ``# path: <path>`` header line (with its newline), or "" without a path."""
    return "" if path is None else f"# path: {_one_line(path)}\n"


def prefix_tail(prefix: str, budget: int, count_tokens: CountTokens) -> str:
    """The longest tail of ``prefix`` made of whole lines that fits ``budget`` tokens.

    The last line (the one holding the cursor) is cut from the left, mid-line, only when
    it does not fit on its own. count_tokens is called about once per kept line plus a
    logarithmic number of times for a mid-line cut, never on more than
    ``budget * MAX_CHARS_PER_TOKEN`` code points at once.
    """
    lines = _lines(prefix)
    kept = _fitting_lines(lines[::-1], budget, count_tokens)
    if kept == 0:
        return _fitting_piece(lines[-1], budget, count_tokens, keep_end=True)
    return "".join(lines[len(lines) - kept :])


# When the window must move, its new start leaves this share of the budget free, so
# that the next many keystrokes keep the same start (and the model's KV prefix).
SLACK = 0.25


def anchored_tail(prefix: str, budget: int, count_tokens: CountTokens, anchor: int | None) -> str:
    """The prompt's part of ``prefix``, whose start moves as seldom as it can.

    :func:`prefix_tail` starts at the earliest line that fits, so in a long file
    nearly every new line moves the start, and a moved start costs the whole KV
    prefix (a full prefill instead of a few tokens). ``anchor`` is where the
    previous prompt for the document started (an offset in ``prefix``). The start
    stays there while the text from it fits ``budget`` and still fills at least
    ``1 - 2 * SLACK`` of it (a cursor moved far up gets a full window again).
    Otherwise, with an anchor, the new start is the earliest line that fits
    ``budget * (1 - SLACK)``, leaving room to type before it moves again; without
    one (the first prompt) it is :func:`prefix_tail`'s.
    """
    if anchor is None:
        return prefix_tail(prefix, budget, count_tokens)
    if _is_line_start(prefix, anchor):
        tail = prefix[anchor:]
        used = _used(tail, budget, count_tokens)
        if used is not None and (anchor == 0 or used >= budget * (1 - 2 * SLACK)):
            return tail
    whole = prefix_tail(prefix, budget, count_tokens)
    if len(whole) == len(prefix) or "\n" not in whole[:-1]:
        return whole  # all of it fits, or not even whole lines do
    roomy = prefix_tail(whole, int(budget * (1 - SLACK)), count_tokens)
    start = len(whole) - len(roomy)
    return roomy if start == 0 or whole[start - 1] == "\n" else whole  # whole lines only


def _is_line_start(text: str, offset: int) -> bool:
    return 0 <= offset <= len(text) and (offset == 0 or text[offset - 1] == "\n")


def _used(text: str, budget: int, count_tokens: CountTokens) -> int | None:
    """``text``'s tokens counted as ``prefix_tail`` counts them (line by line); None
    when they exceed ``budget`` (found without counting past it)."""
    used = 0
    for line in _lines(text):
        if len(line) > (budget - used) * MAX_CHARS_PER_TOKEN:
            return None
        used += count_tokens(line)
        if used > budget:
            return None
    return used


def suffix_head(suffix: str, budget: int, count_tokens: CountTokens) -> str:
    """The longest head of ``suffix`` made of whole lines that fits ``budget`` tokens.

    The mirror image of :func:`prefix_tail`: the first line (the rest of the cursor's
    line) is cut from the right only when it does not fit on its own.
    """
    lines = _lines(suffix)
    kept = _fitting_lines(lines, budget, count_tokens)
    if kept == 0:
        return _fitting_piece(lines[0], budget, count_tokens, keep_end=False)
    return "".join(lines[:kept])


def _lines(text: str) -> list[str]:
    """``text`` split after each "\\n", newlines kept; always at least one (maybe empty) line."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + [parts[-1]]


def _fitting_lines(lines: Sequence[str], budget: int, count_tokens: CountTokens) -> int:
    """How many of ``lines``, taken in order, fit in ``budget`` tokens together."""
    used = 0
    for taken, line in enumerate(lines):
        if len(line) > (budget - used) * MAX_CHARS_PER_TOKEN:
            return taken
        used += count_tokens(line)
        if used > budget:
            return taken
    return len(lines)


def _fitting_piece(line: str, budget: int, count_tokens: CountTokens, *, keep_end: bool) -> str:
    """The longest piece at one end of ``line`` (its end if ``keep_end``) within ``budget``.

    Binary search over the piece's length; token counts grow with length.
    """

    def piece(length: int) -> str:
        return line[len(line) - length :] if keep_end else line[:length]

    low, high = 0, min(len(line), budget * MAX_CHARS_PER_TOKEN)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(piece(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return piece(low)


def _one_line(path: str) -> str:
    """A path with line breaks flattened, so that it cannot end its header line early."""
    return " ".join(path.splitlines())
