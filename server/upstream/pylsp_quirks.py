"""Where pylsp 1.15's columns are not what it says they are.

pylsp advertises no ``positionEncoding`` and indexes Python strings (code
points); :mod:`steerlsp.server.documents.encodings` converts those. Its pyflakes plugin
is the exception: ``PyflakesDiagnosticReport.flake`` puts the AST's
``col_offset`` in ``start.character``, and CPython counts that in UTF-8 bytes.
Its ``end.character`` is ``len(line)`` with the line's newline, in code
points. Syntax errors (``syntaxError``) use CPython's character offset and end
at ``offset + len(text)``, past that point, so the two are told apart by the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def fix_pyflakes_columns(diagnostics: Any, lines: Sequence[str]) -> None:
    """Rewrite pyflakes' byte start columns as code points, in place."""
    if not isinstance(diagnostics, list):
        return
    for diagnostic in diagnostics:
        if not isinstance(diagnostic, dict) or diagnostic.get("source") != "pyflakes":
            continue
        start, end = _range(diagnostic)
        if start is None or end is None or start["line"] != end["line"]:
            continue
        if not 0 <= start["line"] < len(lines):
            continue
        line = lines[start["line"]]
        if line.isascii() or end["character"] not in (len(line), len(line) + 1):
            continue
        start["character"] = _bytes_to_code_points(line, start["character"])


def _range(diagnostic: dict[str, Any]) -> tuple[Any, Any]:
    range_ = diagnostic.get("range")
    if not isinstance(range_, dict):
        return None, None
    start, end = range_.get("start"), range_.get("end")
    if not all(
        isinstance(p, dict) and type(p.get("line")) is int and type(p.get("character")) is int
        for p in (start, end)
    ):
        return None, None
    return start, end


def _bytes_to_code_points(line: str, offset: int) -> int:
    return len(line.encode("utf-8")[:offset].decode("utf-8", "ignore"))
