"""The type the expression at a trigger must have, read with ChatLSP's own reading.

``models/semantics/expected.py`` finds it from the annotations around the
hole: a return annotation, an annotated variable or field (``name: str =
user.``, ``self.total = cart.`` with ``total: int`` in the class), a typed
container's element, a parameter's default. Steering reads it without Jedi
(a :class:`Lookup` that knows nothing), so a call argument's parameter type is
not known here. Only the code from the last top-level ``def``, ``class`` or
decorator line is parsed: a few milliseconds, not a whole module's parse.
"""

from __future__ import annotations

from steerlsp.models.semantics.expected import Annotation, expected_at
from steerlsp.models.semantics.hole import Hole, find_hole
from steerlsp.models.steering.lexing import TOP_LEVEL

# How far back the top-level line is looked for (characters); past it, nothing is read.
MAX_SCAN = 16_000


class _NoLookup:
    """What Jedi would tell ChatLSP, unknown to steering: nothing."""

    def parameter(
        self, line: int, column: int, index: int | None, keyword: str | None
    ) -> Annotation | None:
        return None

    def attribute(self, line: int, column: int, name: str) -> Annotation | None:
        return None

    def alias(self, annotation: Annotation) -> Annotation | None:
        return None


def current_hole(before: str) -> Hole | None:
    """The hole at the end of ``before``, parsed from the last top-level ``def``,
    ``class`` or decorator line within :data:`MAX_SCAN` (from the start of a shorter
    text); None when there is none, or the code cannot be read."""
    head = before[-MAX_SCAN:]
    anchors = list(TOP_LEVEL.finditer(head))
    if not anchors:
        if len(head) < len(before):
            return None
        start = 0
    else:
        start = anchors[-1].start()
    text = head[start:]
    lines = text.split("\n")
    try:
        return find_hole(text, len(lines) - 1, len(lines[-1]))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def expected_type(hole: Hole | None) -> str:
    """The annotation the expression at ``hole`` (:func:`current_hole`) must satisfy,
    as written (``dict[str, Any]``); "" when none says, or the code cannot be read."""
    if hole is None:
        return ""
    try:
        found = expected_at(hole, "", _NoLookup())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    return found.annotation.text if found is not None else ""
