"""Two independent references for incremental sync: LSP's rules on the whole text,
and what pylsp's own ``Document.apply_change`` makes of the same events."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from pylsp.workspace import Document

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # LSP's line ends


def units(text: str, encoding: str) -> int:
    if encoding == UTF16:
        return len(text.encode("utf-16-le")) // 2
    return len(text.encode()) if encoding == UTF8 else len(text)


def change(sl: int, sc: int, el: int, ec: int, text: str) -> dict[str, Any]:
    return {
        "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
        "text": text,
    }


def reference(text: str, event: dict[str, Any], encoding: str) -> str:
    """LSP's rules on the whole text: the model ``DocumentText`` must agree with."""
    if "range" not in event:
        return str(event["text"])
    starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]

    def offset(position: dict[str, int]) -> int:
        line = position["line"]
        if line >= len(starts):
            return len(text)
        end = starts[line + 1] if line + 1 < len(starts) else len(text)
        content = LINE_BREAK.sub("", text[starts[line] : end])
        counted = column = 0
        while column < len(content) and counted < position["character"]:
            counted += units(content[column], encoding)
            column += 1
        return starts[line] + column

    a, b = sorted((offset(event["range"]["start"]), offset(event["range"]["end"])))
    return text[:a] + event["text"] + text[b:]


def pylsp_view(text: str, events: list[dict[str, Any]]) -> str:
    """What pylsp 1.15 makes of ``events`` (it splits with splitlines, counts code points)."""
    doc = Document("file:///t.py", SimpleNamespace(_config=None), source=text)
    for event in events:
        doc.apply_change(event)
    return str(doc.source)
