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
  - on an empty line (the cursor at column 0, as after Enter without auto-indent), the
    column says nothing, so the block comes from the code above: after a block header,
    the header's indentation + 1; inside an indented block, the indentation of the
    outermost body it belongs to (a ``def`` at module level: its body's), so the completion
    may not leave for module level; else (module level, or two blank lines above, as PEP 8
    puts before a top-level definition) 0. The completion's first line is then a whole
    line, and its own indentation counts like that of every later line;
  - at the end of a block header (a line ending in ``:`` outside brackets, strings and
    comments), the header's indentation + 1: the body is deeper than the header, and a
    line back at the header's level ends the body;
  - otherwise (single-line completions) the cursor line's indentation; unused.

Brackets and strings are read by :mod:`steerlsp.prompts.scan`, from the cursor line only
(and, for the column-0 case above, from a bounded stretch of the lines above): brackets
opened on earlier lines, or a triple-quoted string begun on one, are not seen.

Degenerate output: a small model can loop (``f(f(f(``, one keyword argument eight times,
one line over and over). The end of the text repeating a piece that holds a letter, digit
or underscore at least 3 times and over at least 24 characters stops generation, and only
the first copy is kept. Such a cut, or the token limit, leaves the last statement
unfinished: the text is then trimmed back to the last complete one (see :func:`finalize`).
"""

from __future__ import annotations

import re
from enum import Enum

from steerlsp.prompts.scan import lines, scan

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
    REPETITION = "repetition"  # the model is looping


# Degenerate repetition (see the module docstring). A piece may be as long as a line of code;
# short pieces must repeat more often (``[0, 0, 0, 0]`` is data, not a loop).
_REPEAT_MAX_PERIOD = 120
_REPEAT_MIN_COPIES = 3
_REPEAT_MIN_SPAN = 24

# How much of the prefix block_indent reads to find the block around a column-0 cursor: a
# page or two of code, so that a huge document costs no more than a small one.
_ENCLOSING_SCAN_CHARS = 8192


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
    cursor line's part. Only its last line is read, unless that line is empty: then up to
    ``_ENCLOSING_SCAN_CHARS`` of the lines above.
    """
    newline = prefix.rfind("\n")
    line_prefix = prefix[newline + 1 :]
    width = indent_width(line_prefix)
    if line_prefix.strip():
        return width + 1 if _ends_block_header(line_prefix) else width
    if line_prefix or newline < 0:
        return width  # a column the user (or the editor) chose, or the document's start
    start = max(newline - _ENCLOSING_SCAN_CHARS, 0)
    return _enclosing_indent(prefix[start:newline], cut=start > 0)


def stop_reason(
    generated: str,
    *,
    mode: CompletionMode,
    indent_of_block: int,
    max_lines: int,
    line_prefix: str | None = None,
) -> Stop | None:
    """Why generation should stop now, or None to go on; cheap enough to call per token.

    Single-line: at the first line break. Multi-line: once a non-blank line after the first
    starts shallower than ``indent_of_block`` (as soon as its first non-blank character shows;
    a line that continues an open bracket or string never does), or once ``max_lines``
    non-blank lines have ended with a line break, where a line inside an open bracket or
    string (or after a backslash) counts only when its statement ends. The first line
    continues the cursor's line, so it never dedents, unless ``line_prefix`` (the cursor
    line's text before the cursor) is given and holds only indentation: the first line is
    then a whole line too. Either mode: when the end of the text is a degenerate repetition
    (checked on a bounded tail). ValueError if ``max_lines`` < 1.
    """
    point = _stop_point(generated, mode, indent_of_block, max_lines, line_prefix)
    if point is not None:
        return point[1]
    return Stop.REPETITION if _repetition_cut(generated) is not None else None


def finalize(
    generated: str,
    *,
    mode: CompletionMode,
    line_prefix: str,
    suffix: str,
    block_indent: int,
    max_lines: int | None = None,
    truncated: bool = False,
) -> str:
    """The text to insert at the cursor, or "" when nothing should be added.

    Pass the ``max_lines`` given to :func:`stop_reason`: the token that ended the last
    allowed line may carry the start of the next one, which only this cut removes. Pass
    ``truncated`` when generation ended at the token limit.

    In order:

    1. cut where :func:`stop_reason` stops (the dedented line, or what follows the line
       break or the last allowed line, is dropped); for a degenerate repetition, after its
       first copy;
    1a. when step 1 cut a repetition, or the text was truncated and step 1 did not cut it,
       trim back to the last complete statement: multi-line, to the last line break where
       the completion's own brackets and strings are closed and no block header or
       backslash continuation is left waiting ("" if there is none); single-line, to before
       the first of its own brackets or strings left open. Multi-line and not cut short, the
       same trim (when something complete remains) if the last line leaves a bracket or
       string open, or the last line of code is a block header with no body (unless the
       code after the cursor's line holds it): a dedent or the line limit stopped it
       mid-statement;
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
    point = _stop_point(generated, mode, block_indent, max_lines, line_prefix)
    text = generated if point is None else generated[: point[0]]
    repeated = _repetition_cut(text)
    text = text if repeated is None else text[:repeated]
    rest, _, after = suffix.partition("\n")
    outer = scan(line_prefix).open_tokens()
    if repeated is not None or (truncated and point is None):
        text = _last_complete(text, mode, line_prefix, outer)
    elif mode is CompletionMode.MULTI_LINE:
        text = _without_open_last_line(text, line_prefix, after)
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


def _enclosing_indent(text: str, *, cut: bool) -> int:
    """Block indentation for a column-0 cursor on the line after ``text`` (module docstring).

    ``cut``: ``text`` is the end of a longer prefix. Reads logical lines with :func:`lines`,
    so that comments, blank lines and lines inside strings or brackets count for nothing.
    """
    if cut:
        # Begin at what looks like a top-level statement: less likely inside a string.
        found = re.search(r"\n(?=[A-Za-z_@])", text)
        text = text[found.end() if found else text.find("\n") + 1 :]
    last: tuple[int, bool] | None = None  # (indentation, is a block header) of the last statement
    body: int | None = None  # least indentation of statements since the last one at column 0
    blank_run = 0  # blank lines right above the cursor
    for line in lines(text):
        code = line.code(text)
        if not line.before:
            if not code.strip():
                blank_run = blank_run + 1 if line.comment_at is None else 0
                continue
            width = indent_width(code)
            body = None if width == 0 else min(width, body or width)
            last = (width, False)
        blank_run = 0
        code = code.rstrip()
        if last is not None and not line.after and not code.endswith("\\"):
            last = (last[0], code.endswith(":"))
    if last is None:
        return 0
    if last[1]:
        return last[0] + 1
    return 0 if blank_run >= 2 or body is None else body


def _stop_point(
    generated: str,
    mode: CompletionMode,
    block_indent: int,
    max_lines: int | None,
    line_prefix: str | None = None,
) -> tuple[int, Stop] | None:
    """Where (offset of the line break to cut at) and why generation stops, or None."""
    if max_lines is not None and max_lines < 1:
        raise ValueError(f"max_lines must be >= 1, got {max_lines!r}")
    if mode is CompletionMode.SINGLE_LINE:
        newline = generated.find("\n")
        return None if newline < 0 else (newline, Stop.NEWLINE)
    # On a line holding only indentation the first line is a whole line, whose own
    # indentation counts (at column 0 it is all there is).
    # Lines are counted as statements end: a call spread over lines is one line, so the
    # limit never cuts it open; a line that continues a bracket or string never dedents.
    whole_first = line_prefix is not None and not line_prefix.strip()
    finished = 0
    for line in lines(generated):
        text = generated[line.start : line.end]
        if not text.strip():
            continue
        if not line.before:
            if line.start == 0:
                dedents = whole_first and indent_width(f"{line_prefix}{text}") < block_indent
            else:
                dedents = indent_width(text) < block_indent
            if dedents:
                return max(line.start - 1, 0), Stop.DEDENT
        ends = not line.after and not line.code(generated).rstrip().endswith("\\")
        if ends and line.end < len(generated):
            finished += 1
            if max_lines is not None and finished >= max_lines:
                return line.end, Stop.MAX_LINES
    return None


def _repetition_cut(text: str) -> int | None:
    """Where to cut a degenerate repetition ending ``text`` (after its first copy), or None.

    Reads at most the last ``_REPEAT_MAX_PERIOD * _REPEAT_MIN_COPIES`` characters unless it
    finds one, so it is cheap enough to run after every token.
    """
    size = len(text)
    for period in range(1, min(_REPEAT_MAX_PERIOD, size // _REPEAT_MIN_COPIES) + 1):
        span = max(period * _REPEAT_MIN_COPIES, _REPEAT_MIN_SPAN)
        if span > size or text[-1] != text[-1 - period]:
            continue
        if text[size - span : size - period] != text[size - span + period :]:
            continue  # the last ``span`` characters do not repeat with this period
        piece = text[size - period :]
        if not any(char.isalnum() or char == "_" for char in piece):
            continue  # whitespace or a rule of punctuation, not a loop
        start = size - span
        while start > 0 and text[start - 1] == text[start - 1 + period]:
            start -= 1
        cut = start + period
        # A piece spanning lines keeps whole lines: the first copy ends at a line break.
        return text.index("\n", cut - 1) + 1 if "\n" in piece else cut
    return None


def _last_complete(
    text: str, mode: CompletionMode, line_prefix: str, outer: tuple[str, ...]
) -> str:
    """``text`` trimmed back to its last complete statement (step 1a), or ""."""
    if mode is CompletionMode.SINGLE_LINE:
        own = [item for item in scan(text, outer).open if not item.outer]
        return text[: own[0].at] if own else text
    end, _ = _statement_ends(text, line_prefix)
    return "" if end is None else text[:end]


def _without_open_last_line(text: str, line_prefix: str, after: str = "") -> str:
    """``text`` without a last statement left unfinished (step 1a's second case), unless
    that is a block header whose body the code ``after`` the cursor's line already
    holds (its next line of code stands deeper)."""
    end, open_at_end = _statement_ends(text, line_prefix)
    if not open_at_end or end is None:
        return text
    last = (line_prefix + text).rstrip().rsplit("\n", 1)[-1]
    following = _first_code_line(after)
    if (
        last.rstrip().endswith(":")
        and following is not None
        and indent_width(following) > indent_width(last)
    ):
        return text
    return text[:end]


def _statement_ends(text: str, line_prefix: str) -> tuple[int | None, bool]:
    """The offset of the last line break in ``text`` that ends a complete statement (or None),
    and whether the text ends mid-statement: its last line leaves a bracket, string or
    backslash continuation open, or its last line of code is a block header with no body
    after it (the line limit or a dedent stopped it there: ``if x:`` and nothing more).

    ``line_prefix`` (blank or a block header in multi-line mode) begins the first line.
    """
    whole = line_prefix + text
    end: int | None = None
    open_at_end = False
    header_last = False
    for line in lines(whole):
        code = line.code(whole).rstrip()
        waiting = bool(line.after) or code.endswith("\\")
        if line.end == len(whole):
            open_at_end = waiting
        if code.strip():
            header_last = not waiting and code.endswith(":") and line.end > len(line_prefix)
        if line.end != len(whole) and code.strip() and not waiting and not code.endswith(":"):
            end = max(line.end - len(line_prefix), 0)
    return end, open_at_end or header_last


def _trimmed(text: str, rest: str) -> str:
    """Trailing whitespace removed from each line and the end, but for step 2's exception."""
    parts = text.split("\n")
    text = "\n".join([part.rstrip() for part in parts[:-1]] + parts[-1:])
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
