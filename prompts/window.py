"""Where each document's prompt window started, so that the next prompt can start there.

The model's KV cache is reused for the prompt's longest shared prefix: a window
whose first line moves (the prefix budget is full and the user typed a line)
costs a full prefill. ``prompts.builder.anchored_tail`` keeps the start put when
it is told where it was; this remembers it per document, as an absolute line
number and that line's text, because the text the server hands over is itself a
window of the document whose first line moves.
"""

from __future__ import annotations

from collections import OrderedDict

# Documents remembered; the least recently completed is forgotten first.
REMEMBERED = 64


class WindowAnchors:
    """Per document: the line the last prompt started at, and that line's text."""

    def __init__(self, remembered: int = REMEMBERED) -> None:
        self._anchors: OrderedDict[str | None, tuple[int, str]] = OrderedDict()
        self._remembered = remembered

    def offset(self, document: str | None, prefix: str, cursor_line: int) -> int | None:
        """The offset in ``prefix`` (the text before the cursor, whose last line is the
        document's ``cursor_line``) where the remembered line starts, if it is still
        there with the same text; None otherwise."""
        remembered = self._anchors.get(document)
        if remembered is None:
            return None
        line, text = remembered
        start = _line_start(prefix, cursor_line - line)
        if start is None or not prefix.startswith(text, start):
            return None
        return start

    def remember(self, document: str | None, prefix: str, cursor_line: int, start: int) -> None:
        """The prompt for ``document`` starts at offset ``start`` of ``prefix`` (a line start)."""
        if start > 0 and prefix[start - 1] != "\n":
            self._anchors.pop(document, None)  # cut mid-line: nothing to keep
            return
        line = cursor_line - prefix.count("\n", start)
        end = prefix.find("\n", start)
        self._anchors[document] = (line, prefix[start : len(prefix) if end < 0 else end + 1])
        self._anchors.move_to_end(document)
        while len(self._anchors) > self._remembered:
            self._anchors.popitem(last=False)


def _line_start(prefix: str, back: int) -> int | None:
    """Offset of the line ``back`` lines above ``prefix``'s last line; None if the
    prefix does not reach that far."""
    if back < 0:
        return None
    end = len(prefix)
    for step in range(back + 1):
        end = prefix.rfind("\n", 0, end)
        if end < 0:
            return 0 if step == back else None
    return end + 1
