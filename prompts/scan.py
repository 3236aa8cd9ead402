"""A tokenizer-free scanner for brackets, string literals and comments in Python source.

It tracks what is open (brackets and string literals) so that post-processing can tell
which brackets a completion closes. Inside a string literal nothing counts but its closing
quote; after a ``#`` outside strings nothing counts until the line break. Backslash escapes
the next character (raw strings included: ``r"\\""`` does not end at the second quote).
A one-quote string left open at a line break is dropped, as Python would reject it; a
triple-quoted one stays open. f-string replacement fields count as string text. A closing
bracket that does not match the innermost open bracket is ignored.

Offsets are code-point indices into the scanned ``str``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

OPENING = {"(": ")", "[": "]", "{": "}"}
CLOSING = {close: open_ for open_, close in OPENING.items()}
QUOTE_CHARS = "'\""


@dataclass(frozen=True)
class Opened:
    """An open bracket or string literal.

    ``token`` is "(", "[", "{" or the quote that opened a string (', ", ''' or \"\"\").
    ``at`` is its offset in the scanned text, or -1 when it was already open before the
    text (passed in as ``start``): such an item is *outer*.
    """

    token: str
    at: int

    @property
    def outer(self) -> bool:
        """Whether it was opened before the scanned text."""
        return self.at < 0

    @property
    def is_string(self) -> bool:
        """Whether it is a string literal rather than a bracket."""
        return self.token[0] in QUOTE_CHARS


@dataclass(frozen=True)
class Closed:
    """``opened`` closed by the bracket or quote at offset ``at``."""

    opened: Opened
    at: int


@dataclass(frozen=True)
class Scan:
    """What scanning a text found.

    ``open``: items still open at its end, innermost last. ``closed``: every closing, in
    text order. ``comment_at``: offset of the first comment's ``#``, or None.
    """

    open: tuple[Opened, ...]
    closed: tuple[Closed, ...]
    comment_at: int | None

    def open_tokens(self) -> tuple[str, ...]:
        """The tokens still open, innermost last: the ``start`` for scanning what follows."""
        return tuple(item.token for item in self.open)


def scan(text: str, start: Sequence[str] = ()) -> Scan:
    """Scan ``text``, which follows code where the ``start`` tokens (innermost last) are open."""
    stack = [Opened(token, -1) for token in start]
    closed: list[Closed] = []
    comment_at: int | None = None
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        if stack and stack[-1].is_string:
            quote = stack[-1].token
            if char == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                closed.append(Closed(stack.pop(), i))
                i += len(quote)
                continue
            if char == "\n" and len(quote) == 1:
                stack.pop()
            i += 1
        elif char == "#":
            comment_at = i if comment_at is None else comment_at
            newline = text.find("\n", i)
            i = end if newline < 0 else newline + 1
        elif char in QUOTE_CHARS:
            quote = char * 3 if text.startswith(char * 3, i) else char
            stack.append(Opened(quote, i))
            i += len(quote)
        else:
            if char in OPENING:
                stack.append(Opened(char, i))
            elif char in CLOSING and stack and stack[-1].token == CLOSING[char]:
                closed.append(Closed(stack.pop(), i))
            i += 1
    return Scan(tuple(stack), tuple(closed), comment_at)


@dataclass(frozen=True)
class Line:
    """One line of a text scanned by :func:`lines`.

    ``start`` is the offset of its first character, ``end`` that of the "\\n" ending it (or
    the text's length). ``before`` and ``after`` are the tokens open at its start and its end,
    innermost last. A one-quote string left open at the end is in ``after`` (Python rejects
    the line) but not in the next line's ``before``. ``comment_at`` is the offset of its
    comment's ``#``, or None.
    """

    start: int
    end: int
    before: tuple[str, ...]
    after: tuple[str, ...]
    comment_at: int | None

    def code(self, text: str) -> str:
        """The line's text before any comment."""
        return text[self.start : self.end if self.comment_at is None else self.comment_at]


def lines(text: str, start: Sequence[str] = ()) -> Iterator[Line]:
    """Scan ``text`` line by line, carrying what is open from one line to the next."""
    state, begin = tuple(start), 0
    while True:
        newline = text.find("\n", begin)
        end = len(text) if newline < 0 else newline
        found = scan(text[begin:end], state)
        after = found.open_tokens()
        comment_at = None if found.comment_at is None else begin + found.comment_at
        yield Line(begin, end, state, after, comment_at)
        if newline < 0:
            return
        continued = text[begin:end].endswith("\\")  # a backslash carries a string on
        one_quote = bool(after) and after[-1] in QUOTE_CHARS
        state = after[:-1] if one_quote and not continued else after
        begin = newline + 1
