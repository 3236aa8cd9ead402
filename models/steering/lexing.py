"""The monitor lexer's parts that keep state of their own: the text, and string literals.

:class:`Text` keeps the text fed so far, for the slices the monitor reads back
(a callee's source). :class:`StringLexer` holds what the monitor knows about
the string literal it is in (or the quotes that may open one): quotes, triple
quotes, escapes, f-string fields. It never decides what the code around the
string means: each scan returns what the monitor must do next (a field opens,
a format spec's field closes, the string ends), at which offset. Offsets are as
in ``monitor.py``: code points from the start of all the text fed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Literal, NamedTuple

# A line that starts a top-level definition: outside any string or bracket, in code, so
# a lexer (or a parser) may start there.
TOP_LEVEL = re.compile(r"^(?:@|def |async def |class )", re.MULTILINE)
# What a scan of a string's body ends at, for the monitor to act on.
Event = Literal["field", "close", "end"] | None

_STOPS = {
    (q, braces): re.compile(rf"[\\\n{q}{'{}' if braces else ''}]")
    for q in "'\""
    for braces in (False, True)
}


class Text:
    """The text fed so far, kept as the pieces it came in."""

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._starts: list[int] = []
        self.length = 0

    def fork(self) -> Text:
        """An independent copy."""
        other = Text()
        other._chunks, other._starts = list(self._chunks), list(self._starts)
        other.length = self.length
        return other

    def append(self, text: str) -> int:
        """Add ``text`` at the end. -> the offset it starts at"""
        start = self.length
        self._chunks.append(text)
        self._starts.append(start)
        self.length += len(text)
        return start

    def slice(self, start: int, end: int) -> str:
        """The text from offset ``start`` to ``end``."""
        if end <= start:
            return ""
        index = bisect_right(self._starts, start) - 1
        parts = []
        while index < len(self._chunks) and self._starts[index] < end:
            chunk_start = self._starts[index]
            parts.append(self._chunks[index][max(start - chunk_start, 0) : end - chunk_start])
            index += 1
        return "".join(parts)


class StringState(NamedTuple):
    """The f-string a replacement field interrupts, to resume at its ``}``."""

    quote: str
    triple: bool
    start: int
    previous: str  # the token before the string
    spec: bool  # the field sits in a format spec: ``f"{x:>{width}}"``


class StringLexer:
    """The string being lexed, or the one to three quotes that may open one."""

    def __init__(self) -> None:
        self.quote = '"'
        self.triple = False
        self.escape = False
        self.quote_run = 0  # closing quotes seen in a row, in a triple-quoted string
        self.opening = 0  # quotes seen that open a string not yet known to be triple
        self.start = 0
        self.previous = ""  # the token before the string
        self.fstring = False  # the string has replacement fields
        self.spec = False  # in a field's format spec, which ends at the field's ``}``
        self.brace = False  # a ``{`` was seen in an f-string: a field, or ``{{``

    def begin(self, start: int, quote: str, previous: str, *, fstring: bool = False) -> None:
        """A quote at ``start``: a string opens (how many quotes, the next characters say)."""
        self.opening = 1
        self.quote = quote
        self.start = start
        self.previous = previous
        self.fstring = fstring
        self.spec = False

    def opened(self, char: str) -> tuple[bool, Literal["string", "empty"] | None]:
        """After one or two quotes, ``char``: (whether it is consumed, what the quotes
        turned out to open: "string", "empty" (``""``, ended before ``char``) or None
        for not yet known)."""
        if char == self.quote:
            if self.opening == 1:
                self.opening = 2
                return True, None
            self.opening = 0
            self.triple, self.quote_run = True, 0
            return True, "string"
        if self.opening == 1:
            self.opening = 0
            self.triple, self.escape = False, False
            return False, "string"
        self.opening = 0
        return False, "empty"

    def scan(self, text: str, index: int, base: int) -> tuple[int, Event, int]:
        """Lex the string's body in ``text`` (which starts at offset ``base``) from
        ``index``. -> (where to go on, what ended the scan, at which offset): "field"
        (a replacement field opens there; go on lexing code), "close" (the field whose
        format spec this is ends there), "end" (the string ends there) or None."""
        if self.escape:
            self.escape = False
            self.quote_run = 0
            return index + 1, None, 0
        if self.brace:
            self.brace = False
            if text[index] == "{" and not self.spec:  # ``{{``: a literal brace
                return index + 1, None, 0
            return index, "field", base + index - 1  # lexed again as code
        stop = _STOPS[self.quote, self.fstring].search(text, index)
        if stop is None:
            self.quote_run = 0
            return len(text), None, 0
        at = stop.start()
        if at > index:
            self.quote_run = 0
        char = text[at]
        if char == "\\":
            self.escape = True
            return at + 1, None, 0
        if char == "{":
            self.brace, self.quote_run = True, 0
            return at + 1, None, 0
        if char == "}":
            self.quote_run = 0
            if self.spec:  # the end of the field whose format spec this is
                return at + 1, "close", base + at + 1
            return at + 1, None, 0  # else ``}}``, or a stray brace, is text
        if char == "\n":
            if self.triple:
                self.quote_run = 0
                return at + 1, None, 0
            return at, "end", base + at  # unterminated: the newline ends it
        if not self.triple:
            return at + 1, "end", base + at + 1
        self.quote_run += 1
        if self.quote_run == 3:
            return at + 1, "end", base + at + 1
        return at + 1, None, 0

    def suspend(self) -> StringState:
        """A replacement field opens: the string to resume at its ``}``."""
        resume = StringState(self.quote, self.triple, self.start, self.previous, self.spec)
        self.spec, self.quote_run = False, 0
        return resume

    def resume(self, resume: StringState) -> None:
        """Back in the f-string (or its format spec) after a field's ``}``."""
        self.fstring, self.escape, self.quote_run = True, False, 0
        self.quote, self.triple, self.spec = resume.quote, resume.triple, resume.spec
        self.start, self.previous = resume.start, resume.previous

    def enter_spec(self, resume: StringState) -> None:
        """``:`` at a field's top level: its format spec, text up to the field's ``}``
        (which :meth:`scan` reports as "close"), with fields of its own."""
        self.spec, self.fstring = True, True
        self.quote, self.triple = resume.quote, resume.triple
        self.escape = self.brace = False
