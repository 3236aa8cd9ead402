"""What the code around the cursor is for, read from the text: the ranker's query.

Text scanning: the enclosing ``def`` (the nearest one above with less
indentation than the current line), its docstring, the comment lines between
it and the cursor, and the line being written; the expected type alone is
parsed (``ranking/expected.py``).
"""

from __future__ import annotations

import re

from steerlsp.models.semantics.declared import Declarations
from steerlsp.models.steering.ranking.expected import current_hole, expected_type
from steerlsp.models.steering.ranking.relevance import Intent, subclasses_in, type_heads

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)")
_DOC_START = re.compile(r"^[ \t]*[rRbBuU]?(\"\"\"|''')")
# How far back the enclosing function is looked for, in characters.
MAX_SCAN = 16_000
MAX_DOC = 2_000
# How far back the document's classes are read for subclasses of the expected type.
MAX_CLASSES = 64_000


def intent_at(before: str, *, typed: bool = True) -> Intent:
    """The :class:`Intent` of a cursor with ``before`` the text in front of it; its
    expected type (``typed``) from the annotations around it, read as ChatLSP reads
    them (``ranking/expected.py``; a parse of the enclosing top-level definition)."""
    hole = current_hole(before) if typed else None
    expected = expected_type(hole)
    subclasses = (
        subclasses_in(before[-MAX_CLASSES:], type_heads(expected)) if expected else frozenset()
    )
    declared = Declarations(before, hole) if expected else None
    text = before[-MAX_SCAN:]
    lines = text.split("\n")
    current = lines[-1]
    indent = _indent_of(current) if current.strip() else len(current)
    comments: list[str] = []
    for index in range(len(lines) - 2, -1, -1):
        line = lines[index]
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append(stripped.lstrip("#").strip())
            continue
        found = _DEF.match(line)
        if found and len(found.group(1).expandtabs()) < max(indent, 1):
            doc = _docstring(lines[index + 1 :])
            return Intent(
                found.group(2),
                doc,
                " ".join(reversed(comments)),
                current.strip(),
                expected,
                subclasses,
                declared,
            )
    return Intent(
        "", "", " ".join(reversed(comments)), current.strip(), expected, subclasses, declared
    )


def _indent_of(line: str) -> int:
    return len(line.expandtabs()) - len(line.expandtabs().lstrip())


def _docstring(lines: list[str]) -> str:
    """The docstring that opens a body, from the lines after its ``def`` (signature lines
    that continue the ``def`` are skipped)."""
    for start, line in enumerate(lines[:12]):
        opened = _DOC_START.match(line)
        if opened:
            quote = opened.group(1)
            rest = "\n".join(lines[start:])[opened.end() :]
            end = rest.find(quote)
            return (rest if end < 0 else rest[:end])[:MAX_DOC].strip()
        if line.rstrip().endswith(":") and not line.lstrip().startswith(("#", "@")):
            continue  # the end of a multi-line signature
        if line.strip() and not line.strip().startswith(("#", ")")) and start > 0:
            break
    return ""
