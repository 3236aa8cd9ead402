"""ChatLSP semantics for Python: expectedType, relevantTypes and relevantHeaders at
a cursor in (usually incomplete) code, from annotations only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from steerlsp.models.semantics.expected import Expected, expected_at
from steerlsp.models.semantics.hole import Hole, find_hole
from steerlsp.server.chatlsp import ExpectedType, Header, Place, TypeDefinition
from steerlsp.server.chatlsp.semantics.headers import expander, relevant_headers, targets
from steerlsp.server.chatlsp.semantics.lookup import JediLookup
from steerlsp.server.chatlsp.semantics.sources import Sources
from steerlsp.server.chatlsp.semantics.typedefs import relevant_types

_T = TypeVar("_T")


class Semantics:
    """The three static questions about a cursor, for one workspace.

    ``root`` is the workspace root (or None); ``environment`` a venv directory or
    interpreter the user chose (or None: steerlsp's own, see ``sources``). Calls are
    serialised by a lock, since Jedi is not thread safe, so any worker thread may
    call. No method raises: odd input or a Jedi failure gives None or ``[]``.
    Positions are 0-based lines and code-point columns."""

    def __init__(self, root: str | None, environment: str | None) -> None:
        self._lock = threading.RLock()
        self._sources = Sources(root, environment)
        self._last: tuple[str, str, int, int, Hole | None, Expected | None] | None = None

    def expected_type(self, source: str, path: str, line: int, column: int) -> ExpectedType | None:
        """The type the expression at the cursor must have, as its annotation is written,
        or None when no annotation says."""
        found = self._guarded(lambda: self._expected(source, path, line, column)[1], None)
        if found is None:
            return None
        annotation = found.annotation
        place = None
        if annotation.path:
            place = Place(annotation.path, annotation.line, annotation.column)
        return ExpectedType(annotation.text, found.origin, place)

    def relevant_types(
        self, source: str, path: str, line: int, column: int
    ) -> list[TypeDefinition]:
        """The definitions of the types the expected type names, and of what they name."""

        def answer() -> list[TypeDefinition]:
            _, found = self._expected(source, path, line, column)
            return relevant_types(found.annotation, self._sources) if found else []

        return self._guarded(answer, [])

    def relevant_headers(self, source: str, path: str, line: int, column: int) -> list[Header]:
        """Functions, methods and constructors in scope that produce the expected type."""

        def answer() -> list[Header]:
            hole, found = self._expected(source, path, line, column)
            if hole is None or found is None:
                return []
            lookup = JediLookup(self._sources, self._sources.open(path, source))
            wanted = targets(found.annotation.text, expander(found.annotation, lookup))
            return relevant_headers(wanted, hole, path, line, self._sources)

        return self._guarded(answer, [])

    def _expected(
        self, source: str, path: str, line: int, column: int
    ) -> tuple[Hole | None, Expected | None]:
        """The hole and its expected type, remembered for the cursor last asked about
        (a client asks the three questions in a row)."""
        last = self._last
        if last is not None and last[:4] == (source, path, line, column):
            return last[4], last[5]
        hole = find_hole(source, line, column)
        found = None
        if hole is not None:
            found = expected_at(
                hole, path, JediLookup(self._sources, self._sources.open(path, source))
            )
        self._last = (source, path, line, column, hole, found)
        return hole, found

    def _guarded(self, answer: Callable[[], _T], nothing: _T) -> _T:
        with self._lock:
            try:
                return answer()
            except Exception:  # a Jedi or parso failure on odd code is "nothing known"
                return nothing
