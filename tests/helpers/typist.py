"""A scripted typist, as bench/helix_fallback.py drives Helix's completion menu.

Each function of a project is cut out and typed back keystroke by keystroke
(Enter with auto-indent as one keystroke); :class:`Editor` keeps the document
and the cursor and says each keystroke's incremental change. :func:`shown_within`
and :func:`right` score what the user saw: an AI item within a window, and
whether its first line is what the user went on to type.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Keystroke:
    """One keystroke: the text it inserts at the cursor (Enter: a newline and the
    next line's indentation), and what is left to type on the cursor's line after it."""

    insert: str
    rest_of_line: str


@dataclass(frozen=True)
class Target:
    """A function whose body is typed back: the document without it, the cursor there."""

    path: Path
    name: str
    text: str  # the document, the body removed
    line: int  # 0-based cursor line
    column: int  # code points
    keystrokes: tuple[Keystroke, ...]


@dataclass
class Sample:
    """One keystroke's request to one server."""

    function: str
    index: int  # keystroke number within its function
    sent: float  # perf_counter, the keystroke's moment
    received: float | None = None
    items: int = 0
    ai_text: str | None = None
    incomplete: bool = False
    rest_of_line: str = ""


def targets(root: Path) -> list[Target]:
    """Every function of the package under ``root`` (sorted by file and line), with its
    body as keystrokes."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines(keepends=True)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append(_target(path, node, lines))
    return sorted(found, key=lambda t: (str(t.path), t.line))


def _target(path: Path, node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> Target:
    first, last = node.body[0].lineno - 1, node.end_lineno or node.body[-1].lineno  # 0-based
    body = [line.rstrip("\n") for line in lines[first:last]]
    indent = body[0][: len(body[0]) - len(body[0].lstrip())]
    text = "".join(lines[:first]) + indent + "\n" + "".join(lines[last:])
    keys: list[Keystroke] = []
    for number, line in enumerate(body):
        content = line.lstrip()
        keys += [Keystroke(char, content[i + 1 :]) for i, char in enumerate(content)]
        if number + 1 < len(body):
            following = body[number + 1]
            next_indent = following[: len(following) - len(following.lstrip())]
            keys.append(Keystroke("\n" + next_indent, following.lstrip()))
    return Target(path, node.name, text, first, len(indent), tuple(keys))


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Editor:
    """One document's state as the typist sees it: text, cursor (code points)."""

    def __init__(self, target: Target) -> None:
        self.lines = target.text.split("\n")
        self.line, self.column = target.line, target.column

    def type(self, insert: str) -> dict[str, Any]:
        """Apply a keystroke; the incremental change (UTF-16 positions) that says so."""
        current = self.lines[self.line]
        at = {"line": self.line, "character": utf16(current[: self.column])}
        change = {"range": {"start": at, "end": at}, "text": insert}
        head, tail = current[: self.column], current[self.column :]
        parts = (head + insert).split("\n")
        self.lines[self.line : self.line + 1] = [*parts[:-1], parts[-1] + tail]
        self.line += len(parts) - 1
        self.column = len(parts[-1])
        return change

    def position(self) -> dict[str, int]:
        return {"line": self.line, "character": utf16(self.lines[self.line][: self.column])}


def shown_within(samples: list[Sample], window: float) -> list[float | None]:
    """Per keystroke: seconds until a reply (to it or a later keystroke of the same
    function) carried the AI item, if within ``window``; else None."""
    out: list[float | None] = []
    for k, sample in enumerate(samples):
        best = None
        for later in samples[k:]:
            if later.function != sample.function or later.sent > sample.sent + window:
                break
            if later.ai_text is not None and later.received is not None:
                waited = later.received - sample.sent
                if waited <= window and (best is None or waited < best):
                    best = waited
        out.append(best)
    return out


def right(sample: Sample) -> bool:
    """The AI item's first line is what the user goes on to type on this line."""
    if sample.ai_text is None:
        return False
    first = sample.ai_text.split("\n", 1)[0].rstrip()
    return bool(first.strip()) and sample.rest_of_line.startswith(first)
