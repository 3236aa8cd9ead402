"""What an editor should get from pylsp's answers: an independent re-count.

pylsp 1.15 counts columns in code points, except pyflakes' start columns,
which are UTF-8 byte offsets. This oracle re-counts them in UTF-16 from the
files on disk, written separately from the proxy's conversion code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _line(uri: str, number: int, texts: dict[str, str]) -> str:
    text = texts.get(uri) or Path(uri.removeprefix("file://")).read_text()
    lines = text.split("\n")
    return lines[number] if number < len(lines) else ""


def _utf16(line: str, code_points: int) -> int:
    return len(line[:code_points].encode("utf-16-le")) // 2 + max(0, code_points - len(line))


def in_utf16(node: Any, uri: str | None, texts: dict[str, str] | None = None) -> Any:
    """pylsp's JSON answer with every column as the editor (UTF-16) expects it."""
    texts = texts or {}
    if isinstance(node, list):
        return [in_utf16(item, uri, texts) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"line", "character"} and uri is not None:
        line = _line(uri, node["line"], texts)
        return {"line": node["line"], "character": _utf16(line, node["character"])}
    if node.get("source") == "pyflakes" and uri is not None:
        node = _pyflakes_start_in_code_points(node, uri, texts)
    uri = (
        node.get("uri")
        or node.get("targetUri")
        or (node.get("textDocument") or {}).get("uri")
        or uri
    )
    out = {}
    for key, value in node.items():
        if key == "changes":
            out[key] = {doc: in_utf16(edits, doc, texts) for doc, edits in value.items()}
        else:
            out[key] = in_utf16(value, uri, texts)
    return out


def _pyflakes_start_in_code_points(diagnostic: dict, uri: str, texts: dict[str, str]) -> dict:
    start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
    line = _line(uri, start["line"], texts)
    if end["character"] not in (len(line), len(line) + 1):
        return diagnostic  # a syntax error: already code points
    column = len(line.encode()[: start["character"]].decode(errors="ignore"))
    return {
        **diagnostic,
        "range": {"start": {"line": start["line"], "character": column}, "end": end},
    }
