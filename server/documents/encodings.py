"""Position conversion between the client's encoding and the upstream's.

LSP ``Position.character`` counts code units of the negotiated encoding
(UTF-16 unless the client offers another). pylsp 1.15 advertises no
``positionEncoding`` yet indexes Python strings, i.e. counts code points
(UTF-32). Everything here is pure: it rewrites decoded JSON in place, given a
function that returns a document's lines (or ``None`` when no conversion is
needed for that document, the common all-BMP case).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

Lines = Sequence[str]
LinesOf = Callable[[str], "Lines | None"]
# (line text, column) -> column
ColumnMap = Callable[[str, int], int]

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
# Runs on every didChange: scan in C, not a Python loop over the document.
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def units_of(char: str, encoding: str) -> int:
    """Code units one code point takes in ``encoding``."""
    cp = ord(char)
    if encoding == UTF16:
        return 2 if cp > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return 1


def to_code_points(line: str, column: int, encoding: str) -> int:
    """Column in ``encoding`` code units -> code-point column.

    A column past the end of the line keeps its overshoot (pylsp reports
    ``len(line) + 1`` for some diagnostics): the spec lets the receiver clamp,
    and a proxy that clamped would not be transparent.
    """
    if encoding == UTF32:
        return column
    units = 0
    for index, char in enumerate(line):
        if units >= column:
            return index
        units += units_of(char, encoding)
    return len(line) + max(0, column - units)


def from_code_points(line: str, column: int, encoding: str) -> int:
    """Code-point column -> column in ``encoding`` code units (overshoot kept)."""
    overshoot = max(0, column - len(line))
    prefix = line[:column]
    if encoding == UTF32:
        return len(prefix) + overshoot
    if encoding == UTF16:
        return len(prefix.encode("utf-16-le")) // 2 + overshoot
    return len(prefix.encode("utf-8")) + overshoot


def needs_conversion(text: str, client: str, upstream: str) -> bool:
    """Whether any column in ``text`` differs between the two encodings."""
    if client == upstream or text.isascii():
        return False
    if UTF8 in (client, upstream):
        return True
    return _ASTRAL.search(text) is not None


def convert_columns(node: Any, uri: str | None, lines_of: LinesOf, column_map: ColumnMap) -> None:
    """Rewrite every Position in ``node`` (in place) with ``column_map``.

    ``uri`` is the document positions belong to unless a nested ``uri``,
    ``targetUri``, ``textDocument`` or ``WorkspaceEdit.changes`` key says
    otherwise. Documents for which ``lines_of`` returns None are untouched.
    """
    if isinstance(node, list):
        for item in node:
            convert_columns(item, uri, lines_of, column_map)
        return
    if not isinstance(node, dict):
        return
    if _is_position(node):
        _convert_position(node, uri, lines_of, column_map)
        return
    outer = uri
    uri = _uri_in(node) or uri
    for key, value in node.items():
        if key == "changes" and isinstance(value, dict):
            for doc_uri, edits in value.items():
                convert_columns(edits, doc_uri, lines_of, column_map)
        elif key == "originSelectionRange":
            convert_columns(value, outer, lines_of, column_map)
        elif isinstance(value, (dict, list)):
            convert_columns(value, uri, lines_of, column_map)


def _uri_in(node: dict[str, Any]) -> str | None:
    for key in ("uri", "targetUri"):
        value = node.get(key)
        if isinstance(value, str):
            return value
    doc = node.get("textDocument")
    if isinstance(doc, dict) and isinstance(doc.get("uri"), str):
        return str(doc["uri"])
    return None


def _is_position(node: dict[str, Any]) -> bool:
    line, character = node.get("line"), node.get("character")
    return type(line) is int and type(character) is int and len(node) == 2


def _convert_position(
    node: dict[str, Any], uri: str | None, lines_of: LinesOf, column_map: ColumnMap
) -> None:
    if uri is None:
        return
    lines = lines_of(uri)
    if lines is None:
        return
    line = node["line"]
    if 0 <= line < len(lines):
        node["character"] = column_map(lines[line].rstrip("\r\n"), node["character"])
