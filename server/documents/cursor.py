"""The text around a cursor, bounded: what a completion needs of a document.

A completion prompt holds at most a few thousand tokens around the cursor, so
reading the whole document per request (joining, scanning and slicing 20 MB
on every keystroke) buys nothing. This takes whole lines outward from the
cursor's line until a character budget is met.

Conventions: ``line`` is 0-based; ``character`` counts code units of the
negotiated encoding (UTF-16 by default) and may equal the line's length, never
exceed it. Lines end only at ``\\n``, ``\\r\\n`` and ``\\r`` (LSP), and keep their
terminators in the returned text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from steerlsp.server.documents.encodings import to_code_points
from steerlsp.server.documents.text import bare


@dataclass(frozen=True)
class Around:
    """The text before and after a cursor, each cut at a line boundary (or the document's end)."""

    prefix: str
    suffix: str


def text_around(
    lines: Sequence[str], line: int, character: int, encoding: str, *, before: int, after: int
) -> Around | None:
    """At least ``before`` characters before the cursor and ``after`` after it, in whole lines.

    ``lines`` are the document's LSP lines with terminators. Returns None when the
    position lies outside the document (past the last line, or past its line's end).
    """
    if line < 0 or character < 0 or line >= len(lines):
        return None
    current = lines[line]
    text = bare(current)
    column = to_code_points(text, character, encoding)
    if column > len(text):
        return None
    head = [text[:column]]
    size, index = column, line
    while size < before and index > 0:
        index -= 1
        head.append(lines[index])
        size += len(lines[index])
    tail = [current[column:]]
    size, index = len(current) - column, line
    while size < after and index + 1 < len(lines):
        index += 1
        tail.append(lines[index])
        size += len(lines[index])
    return Around("".join(reversed(head)), "".join(tail))
