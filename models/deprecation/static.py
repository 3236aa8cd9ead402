"""Deprecation of a definition, read statically from its source.

The language server resolves a candidate name to a file and a line; this
module reads that file and decides whether the definition there is
deprecated, and what replaces it. Nothing is imported or executed: the file
is parsed with ``ast`` and the checks are syntactic, so a workspace or
site-packages file can be examined without running a line of it.

What counts, in order of strength (the ``source`` of the result):

1. ``decorator``: PEP 702 ``@deprecated`` (``warnings``, ``typing_extensions``),
   the ``deprecated`` and ``deprecation`` packages, under any import alias,
   and any decorator spelt ``deprecated``/``deprecate`` (libraries define
   their own). Argument-level helpers (``deprecate_kwarg``) do not count.
2. ``warning``: a statement the body runs unconditionally that issues a
   DeprecationWarning, FutureWarning or PendingDeprecationWarning (or a
   subclass spelt ``*Deprecat*``/``RemovedIn*Warning``), a warning whose
   message says "deprecated", or a call of a helper named like
   ``warn_deprecated``/``_deprecate``. A warning under an ``if`` usually
   deprecates an argument, not the definition, so it does not count.
3. ``docstring``: an unindented ``.. deprecated::`` directive, a line that
   starts with "Deprecated", or "this function/<name> is deprecated",
   outside the parameter sections (which deprecate arguments).

Also: ``alias = _deprecate(target)`` assignments (unittest), overloads (all or
none), a property's setter (its getter's verdict), and ``if sys.version_info``
blocks decided for the project's Python (typeshed stubs). The wording rules
(the notice in a docstring, the replacement in a message) live in
``deprecation/text.py``; the evidence itself is read in ``evidence.py``, over
the ``ast`` helpers of ``syntax.py``; this module scans scopes and caches files.

Lines are 0-based, as in LSP; ``ast`` counts from 1.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from steerlsp import guard
from steerlsp.models.deprecation.evidence import (
    Deprecation,
    ModuleNames,
    assignment_deprecation,
    own_deprecation,
)
from steerlsp.models.deprecation.syntax import decorator_names, decorators_of, statements
from steerlsp.models.deprecation.text import replacement_in

MAX_SOURCE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class DeprecatedDefinition:
    name: str
    line: int  # 0-based line of the ``def``/``class`` keyword or assignment target
    first_line: int  # 0-based line of the first decorator (== line when undecorated)
    deprecation: Deprecation


def deprecations_in(
    source: str | bytes, python: tuple[int, int] | None = None
) -> list[DeprecatedDefinition]:
    """Every deprecated definition at module level or in a class body, in source order.

    Unparseable source has none. Bytes are decoded as Python does (coding
    cookie, BOM). Functions nested in functions are not examined: they are
    not what a completion list offers. ``python`` (the project's version)
    decides ``if sys.version_info`` blocks, as in typeshed stubs.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[DeprecatedDefinition] = []
    try:
        _scan_scope(tree.body, ModuleNames.of(tree, python), found)
    except RecursionError:  # a pathological expression: say nothing rather than fail
        return []
    found.sort(key=lambda d: (d.line, d.name))
    return found


def deprecation_in_source(
    source: str | bytes,
    line: int,
    name: str | None = None,
    python: tuple[int, int] | None = None,
) -> Deprecation | None:
    """The deprecation of the definition at 0-based ``line`` (and ``name``, if given), or None.

    ``line`` is the definition line a language server reports; a line among
    the definition's decorators also matches.
    """
    return _lookup(deprecations_in(source, python), line, name)


def _lookup(
    found: list[DeprecatedDefinition] | tuple[DeprecatedDefinition, ...],
    line: int,
    name: str | None,
) -> Deprecation | None:
    for definition in found:
        if name is not None and definition.name != name:
            continue
        if definition.first_line <= line <= definition.line:
            return definition.deprecation
    return None


def read_source(path: str | os.PathLike[str], limit: int = MAX_SOURCE_BYTES) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, else None
    (a FIFO or a device can neither block nor be read: :func:`steerlsp.guard.read_regular`)."""
    return guard.read_regular(path, limit)


class DeprecationCache:
    """Deprecated definitions per file, kept while the file's mtime and size are unchanged.

    Bounded (least recently used files go first) and safe to share between
    the event loop and the decode thread. Only the deprecated definitions are
    kept, never the syntax tree.
    """

    def __init__(
        self,
        max_files: int = 256,
        max_bytes: int = MAX_SOURCE_BYTES,
        python: tuple[int, int] | None = None,
    ) -> None:
        if max_files < 1:
            raise ValueError(f"max_files must be at least 1, got {max_files!r}")
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.python = python  # the project's version, for ``sys.version_info`` blocks
        self._files: OrderedDict[str, tuple[int, int, tuple[DeprecatedDefinition, ...]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def of(
        self, path: str | os.PathLike[str], line: int, name: str | None = None
    ) -> Deprecation | None:
        """The deprecation of the definition at 0-based ``line`` of ``path``, or None."""
        return _lookup(self.definitions(path), line, name)

    def definitions(self, path: str | os.PathLike[str]) -> tuple[DeprecatedDefinition, ...]:
        """The deprecated definitions of ``path``; none for an unreadable or oversized file."""
        key = os.fspath(path)
        try:
            info = os.stat(key)
        except (OSError, ValueError):
            return ()
        with self._lock:
            cached = self._files.get(key)
            if cached and cached[:2] == (info.st_mtime_ns, info.st_size):
                self._files.move_to_end(key)
                return cached[2]
        data = read_source(key, self.max_bytes)
        found = tuple(deprecations_in(data, self.python)) if data is not None else ()
        with self._lock:
            self._files[key] = (info.st_mtime_ns, info.st_size, found)
            self._files.move_to_end(key)
            while len(self._files) > self.max_files:
                self._files.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._files)


def _scan_scope(
    body: list[ast.stmt], names: ModuleNames, found: list[DeprecatedDefinition]
) -> None:
    definitions: list[tuple[str, ast.stmt | ast.expr, Deprecation | None]] = []
    for node in statements(body, names.python):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            definitions.append((node.name, node, own_deprecation(node, names)))
            if isinstance(node, ast.ClassDef):
                _scan_scope(node.body, names, found)
        elif isinstance(node, ast.Assign):
            deprecation = assignment_deprecation(node, names)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    definitions.append((target.id, target, deprecation))
    by_name: dict[str, list[tuple[ast.stmt | ast.expr, Deprecation | None]]] = {}
    for name, defined, deprecation in definitions:
        by_name.setdefault(name, []).append((defined, deprecation))
    for name, group in by_name.items():
        overloaded, shared = _group_deprecation(group, names)
        for defined, own in group:
            deprecation = shared if overloaded else own or shared
            if deprecation and deprecation.replacement == name:
                better = replacement_in(deprecation.reason, avoid=name)
                deprecation = dataclasses.replace(deprecation, replacement=better)
            if deprecation:
                first = min([defined.lineno, *(d.lineno for d in decorators_of(defined))])
                found.append(DeprecatedDefinition(name, defined.lineno - 1, first - 1, deprecation))


def _group_deprecation(
    group: list[tuple[ast.stmt | ast.expr, Deprecation | None]], names: ModuleNames
) -> tuple[bool, Deprecation | None]:
    """(whether the name is overloaded, the deprecation its definitions share).

    An overloaded name is deprecated as a whole or not at all: when its
    implementation is (PEP 702), or when every overload is. One deprecated
    overload among others deprecates a way of calling it (``shlex.split(None)``),
    not the name a completion offers. A property's setter and deleter share
    their getter's deprecation.
    """

    def decorated(node: ast.stmt | ast.expr, wanted: frozenset[str] | set[str]) -> bool:
        # torch spells typing.overload ``_overload``
        return any(n.rsplit(".", 1)[-1].lstrip("_") in wanted for n in decorator_names(node))

    overloads = [d for node, d in group if decorated(node, names.overloads)]
    if overloads:
        implementation = [d for node, d in group if not decorated(node, names.overloads)]
        deprecated_implementation = next((d for d in implementation if d), None)
        if deprecated_implementation:
            return True, deprecated_implementation
        return True, overloads[0] if all(overloads) else None
    getters = [d for node, d in group if decorated(node, _PROPERTIES)]
    return False, next((d for d in getters if d), None)


_PROPERTIES = frozenset({"property", "cached_property"})
