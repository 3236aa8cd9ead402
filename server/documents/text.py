"""An open document's text, kept as LSP lines so that an edit costs O(edit + line).

A 20 MB buffer must not be re-split, re-joined or re-scanned on every
keystroke. ``DocumentText`` holds the lines (terminators included), splices
the few lines an edit touches, and keeps the facts position conversion asks
about (pure ASCII? astral characters? line breaks other parsers count?) up to
date from the inserted text alone. The whole text is joined only when someone
reads it, and cached until the next edit.

LSP lines end only at ``\\n``, ``\\r\\n`` and ``\\r``; ``str.splitlines`` also
splits at ``\\f``, ``\\x1c``, ``\\x85``, ``\\u2028`` and others, so it is used only
when none of those occur.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from steerlsp.server.documents.encodings import UTF8, to_code_points

# Breaks str.splitlines honours and LSP does not (pylsp splits with splitlines).
ODD_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_EOL = re.compile(r"(\r\n|\r|\n)")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def has_odd_breaks(text: str) -> bool:
    """Whether ``str.splitlines`` would split ``text`` where LSP does not."""
    # One C-speed search per character: ~6 ms for 20 MB, a regex class is ~50 ms.
    return any(char in text for char in ODD_BREAKS)


def split_keepends(text: str) -> list[str]:
    """LSP lines of ``text`` with their terminators; n breaks give n + 1 lines."""
    if has_odd_breaks(text):
        parts = _EOL.split(text)
        lines = [parts[i] + parts[i + 1] for i in range(0, len(parts) - 1, 2)]
        lines.append(parts[-1])
        return lines
    lines = text.splitlines(True)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    return lines


def bare(line: str) -> str:
    """``line`` without its terminator."""
    return line.rstrip("\r\n")


@dataclass(frozen=True)
class Edit:
    """One change as applied: code-point columns, and the lines they were counted on.

    ``span`` is None for a full-text change. Otherwise it is (start line,
    start column, end line, end column) in code points, ordered and clamped to
    the document; ``start_line``/``end_line`` are those lines (without
    terminators) before the change, for converting the columns to another
    encoding.
    """

    text: str
    span: tuple[int, int, int, int] | None = None
    start_line: str = ""
    end_line: str = ""


def utf8_size(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes (no copy for ASCII text)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class DocumentText:
    """The text of one open document, edited in place; ``size`` is its UTF-8 length."""

    def __init__(self, text: str = "") -> None:
        self._text: str | None = None
        self._lines: list[str] | None = None
        self._bare = _BareLines(self)
        self.ascii = self.astral = self.odd_breaks = False
        self.replace(text)

    # ---- reading -------------------------------------------------------

    @property
    def text(self) -> str:
        """The whole text (joined on first read after an edit)."""
        if self._text is None:
            self._text = "".join(self._lines or ())
        return self._text

    @property
    def lines(self) -> list[str]:
        """LSP lines with their terminators (the last one has none, and may be empty)."""
        if self._lines is None:
            self._lines = split_keepends(self._text or "")
        return self._lines

    @property
    def bare_lines(self) -> Sequence[str]:
        """The lines without terminators: a live view, not a copy."""
        return self._bare

    def needs_conversion(self, client: str, upstream: str) -> bool:
        """Whether any column may differ between the two encodings (never a false no)."""
        if client == upstream or self.ascii:
            return False
        return UTF8 in (client, upstream) or self.astral

    # ---- writing -------------------------------------------------------

    def replace(self, text: str) -> Edit:
        """A full-text change."""
        self._text, self._lines = text, None
        self.size = utf8_size(text)
        # Flags only ever grow under edits: a deleted emoji leaves ``astral``
        # set, which costs a little conversion work and is never wrong.
        self.ascii = text.isascii()  # O(1): CPython caches it
        self.astral = not self.ascii and _ASTRAL.search(text) is not None
        self.odd_breaks = has_odd_breaks(text)
        return Edit(text)

    def edit(self, start: tuple[int, int], end: tuple[int, int], text: str, encoding: str) -> Edit:
        """Replace the range ``start``..``end`` (line, column in ``encoding`` units) by ``text``.

        Positions past the end of a line or of the document are clamped, as
        the spec asks, and a reversed range is ordered; the returned ``Edit``
        says what was really replaced, in code points.
        """
        lines = self.lines
        (sl, sc), (el, ec) = sorted((self._clamp(start, encoding), self._clamp(end, encoding)))
        applied = Edit(text, (sl, sc, el, ec), bare(lines[sl]), bare(lines[el]))
        first, segment = sl, lines[sl][:sc] + text + lines[el][ec:]
        if sl > 0 and segment.startswith("\n") and lines[sl - 1].endswith("\r"):
            first -= 1  # "\r" + "\n" across the old boundary is now one break
            segment = lines[first] + segment
        new = split_keepends(segment)
        if el < len(lines) - 1:
            new.pop()  # the segment ended with line el's own terminator
        removed = sum(map(utf8_size, lines[first : el + 1]))
        lines[first : el + 1] = new
        self.size += sum(map(utf8_size, new)) - removed
        self._text = None
        self.ascii = self.ascii and text.isascii()
        if not self.ascii and not text.isascii():
            self.astral = self.astral or _ASTRAL.search(text) is not None
        self.odd_breaks = self.odd_breaks or has_odd_breaks(text)
        return applied

    def _clamp(self, position: tuple[int, int], encoding: str) -> tuple[int, int]:
        lines = self.lines
        line, column = position
        if line >= len(lines):
            last = len(lines) - 1
            return last, len(bare(lines[last]))
        line = max(line, 0)
        text = bare(lines[line])
        if text.isascii():
            return line, min(max(column, 0), len(text))
        return line, min(to_code_points(text, max(column, 0), encoding), len(text))


class _BareLines(Sequence[str]):
    """``DocumentText.lines`` without terminators, computed per access."""

    def __init__(self, owner: DocumentText) -> None:
        self._owner = owner

    def __len__(self) -> int:
        return len(self._owner.lines)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [bare(line) for line in self._owner.lines[index]]
        return bare(self._owner.lines[index])

    def __iter__(self) -> Iterator[str]:
        return (bare(line) for line in self._owner.lines)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
