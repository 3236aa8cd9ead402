"""Turn what the model generates into the text inserted at the cursor.

Conventions:

* The inserted text starts at the cursor. Its first line continues the cursor's line;
  every later line is a whole document line, indentation included.
* ``line_prefix`` is the cursor line's text before the cursor, ``line_suffix`` (called
  *rest* below) its text after the cursor, ``suffix`` everything after the cursor
  (``rest`` + "\\n" + following lines). All are Python ``str``: offsets and lengths count
  code points, not UTF-16 units. Lines end at "\\n".
* Indentation width counts leading spaces and tabs, tabs advancing to the next multiple of
  8 as in Python's tokenizer.
* Block indentation (computed by :func:`block_indent`, passed as ``indent_of_block`` to
  :func:`stop_reason` and ``block_indent`` to :func:`finalize`) is the least indentation
  a generated line may have and still belong to the completion:

  - on a line holding only indentation, the cursor's column: lines at the cursor's level
    are siblings in its block, shallower lines leave it;
  - at the end of a block header (a line ending in ``:`` outside brackets, strings and
    comments), the header's indentation + 1: the body is deeper than the header, and a
    line back at the header's level ends the body;
  - otherwise (single-line completions) the cursor line's indentation; unused.

Brackets and strings are read by :mod:`steerlsp.prompts.scan`, from the cursor line only:
brackets opened on earlier lines, or a triple-quoted string begun on one, are not seen.
"""

from __future__ import annotations

from enum import Enum

from steerlsp.prompts.scan import scan

_STRING_PREFIX_CHARS = "rRbBuUfF"


class CompletionMode(Enum):
    """How much a completion may span."""

    SINGLE_LINE = "single-line"  # the rest of the cursor's line
    MULTI_LINE = "multi-line"  # whole lines of the cursor's block


class Stop(Enum):
    """Why generation should end."""

    NEWLINE = "newline"  # single-line mode reached the end of the line
    DEDENT = "dedent"  # a line left the cursor's block
    MAX_LINES = "max-lines"  # the line limit is reached


def indent_width(line: str) -> int:
    """Width of ``line``'s leading spaces and tabs (tab stops every 8 columns)."""
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(8))


def completion_mode(line_prefix: str, line_suffix: str) -> CompletionMode:
    """Multi-line on a line holding only indentation, or at the end of a block header.

    Single-line whenever non-blank text follows the cursor on its line, and after any
    other text (the completion then finishes the line).
    """
    if line_suffix.strip():
        return CompletionMode.SINGLE_LINE
    if not line_prefix.strip() or _ends_block_header(line_prefix):
        return CompletionMode.MULTI_LINE
    return CompletionMode.SINGLE_LINE


def block_indent(prefix: str) -> int:
    """The block indentation (see the module docstring) for a cursor after ``prefix``.

    ``prefix`` is the text before the cursor: the whole document prefix or just the
    cursor line's part; only its last line is read.
    """
    line_prefix = prefix.rpartition("\n")[2]
    width = indent_width(line_prefix)
    return width + 1 if line_prefix.strip() and _ends_block_header(line_prefix) else width


def stop_reason(
    generated: str, *, mode: CompletionMode, indent_of_block: int, max_lines: int
) -> Stop | None:
    """Why generation should stop now, or None to go on; cheap enough to call per token.

    Single-line: at the first line break. Multi-line: once a non-blank line after the first
    starts shallower than ``indent_of_block`` (as soon as its first non-blank character shows),
    or once ``max_lines`` non-blank lines have ended with a line break. The first line
    continues the cursor's line, so it never dedents. ValueError if ``max_lines`` < 1.
    """
    point = _stop_point(generated, mode, indent_of_block, max_lines)
    return None if point is None else point[1]


def finalize(
    generated: str,
    *,
    mode: CompletionMode,
    line_prefix: str,
    suffix: str,
    block_indent: int,
    max_lines: int | None = None,
) -> str:
    """The text to insert at the cursor, or "" when nothing should be added.

    Pass the ``max_lines`` given to :func:`stop_reason`: the token that ended the last
    allowed line may carry the start of the next one, which only this cut removes.

    In order:

    1. cut where :func:`stop_reason` stops (the dedented line, or what follows the line
       break or the last allowed line, is dropped);
    2. trim trailing whitespace on every line and at the end, except a space before a word
       that follows the cursor (``foo(|b)`` + ``"a, "``);
    3. on a cursor line holding only indentation, drop up to that much leading whitespace
       from the first line: the model restated indentation the cursor already has;
    4. multi-line: cut before the first line that equals (indentation included) the next
       non-blank line after the cursor's: the model is repeating the following code;
    5. if the rest of the line closes a bracket or string opened before the cursor, cut
       before the completion's own closing of it (``foo(a, |)`` + ``"b), c"`` -> ``"b"``);
    6. drop the longest tail equal to a start of the rest of the line (``x = |value`` +
       ``"new_value"`` -> ``"new_"``), unless that tail closes a bracket or string the
       completion opened (``print(|)`` + ``"f(a)"`` keeps its ``)``);
    7. drop brackets and string quotes opened at the very end and left open (``"compute("``
       -> ``"compute"``): the user would be left to close them;
    8. "" if only whitespace remains.
    """
    point = _stop_point(generated, mode, block_indent, max_lines)
    text = generated if point is None else generated[: point[0]]
    rest, _, after = suffix.partition("\n")
    outer = scan(line_prefix).open_tokens()
    text = _trimmed(text, rest)
    text = _without_restated_indent(text, line_prefix)
    if mode is CompletionMode.MULTI_LINE:
        text = _before_repeated_line(text, line_prefix, after)
    text = _before_outer_close(text, outer, rest)
    text = _without_overlap(text, outer, rest)
    text = _without_trailing_openers(text, outer)
    text = _trimmed(text, rest)
    return text if text.strip() else ""


def _ends_block_header(line_prefix: str) -> bool:
    """Whether the code before any comment ends in ":" with no bracket or string open."""
    found = scan(line_prefix)
    code = line_prefix if found.comment_at is None else line_prefix[: found.comment_at]
    return not found.open and code.rstrip().endswith(":")


def _stop_point(
    generated: str, mode: CompletionMode, block_indent: int, max_lines: int | None
) -> tuple[int, Stop] | None:
    """Where (offset of the line break to cut at) and why generation stops, or None."""
    if max_lines is not None and max_lines < 1:
        raise ValueError(f"max_lines must be >= 1, got {max_lines!r}")
    if mode is CompletionMode.SINGLE_LINE:
        newline = generated.find("\n")
        return None if newline < 0 else (newline, Stop.NEWLINE)
    start, finished = 0, 0
    for number, line in enumerate(generated.split("\n")):
        end = start + len(line)
        if line.strip():
            if number > 0 and indent_width(line) < block_indent:
                return start - 1, Stop.DEDENT
            if end < len(generated):
                finished += 1
                if max_lines is not None and finished >= max_lines:
                    return end, Stop.MAX_LINES
        start = end + 1
    return None


def _trimmed(text: str, rest: str) -> str:
    """Trailing whitespace removed from each line and the end, but for step 2's exception."""
    lines = text.split("\n")
    text = "\n".join([line.rstrip() for line in lines[:-1]] + lines[-1:])
    body = text.rstrip()
    tail = text[len(body) :]
    before_word = rest[:1].isalnum() or rest[:1] == "_"
    return body + tail if body and before_word and "\n" not in tail else body


def _without_restated_indent(text: str, line_prefix: str) -> str:
    if not line_prefix or line_prefix.strip():
        return text
    lead = len(text) - len(text.lstrip(" \t"))
    return text[min(lead, len(line_prefix)) :]


def _before_repeated_line(text: str, line_prefix: str, after: str) -> str:
    following = _first_code_line(after)
    if following is None:
        return text
    for number, line in enumerate((line_prefix + text).split("\n")):
        if line.rstrip() == following:
            return "\n".join(text.split("\n")[:number]).rstrip()
    return text


def _first_code_line(text: str) -> str | None:
    """The first non-blank line of ``text``, right-stripped, without splitting all of it."""
    start = 0
    while True:
        newline = text.find("\n", start)
        line = text[start:] if newline < 0 else text[start:newline]
        if line.strip():
            return line.rstrip()
        if newline < 0:
            return None
        start = newline + 1


def _before_outer_close(text: str, outer: tuple[str, ...], rest: str) -> str:
    if not outer or not any(closed.opened.outer for closed in scan(rest, outer).closed):
        return text
    first = next((closed.at for closed in scan(text, outer).closed if closed.opened.outer), None)
    return text if first is None else text[:first]


def _without_overlap(text: str, outer: tuple[str, ...], rest: str) -> str:
    own_closes = [
        c.at + len(c.opened.token) for c in scan(text, outer).closed if not c.opened.outer
    ]
    removable = len(text) - max(own_closes, default=0)
    for length in range(min(removable, len(rest)), 0, -1):
        overlap = rest[:length]
        if overlap.strip() and text.endswith(overlap):
            return text[:-length]
    return text


def _without_trailing_openers(text: str, outer: tuple[str, ...]) -> str:
    while True:
        body = text.rstrip()
        own = [item for item in scan(body, outer).open if not item.outer]
        if not own or own[-1].at + len(own[-1].token) != len(body):
            return text
        text = body[: own[-1].at]
        if own[-1].is_string:
            text = _without_string_prefix(text)


def _without_string_prefix(text: str) -> str:
    """``text`` less a trailing string prefix (``f``, ``rb``...) that began a word."""
    word = len(text) - len(text.rstrip(_STRING_PREFIX_CHARS))
    start = len(text) - word
    if 0 < word <= 2 and not (text[start - 1 : start].isalnum() or text[start - 1 : start] == "_"):
        return text[:start]
    return text
