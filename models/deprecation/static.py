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
``models.deprecation_text``.

Lines are 0-based, as in LSP; ``ast`` counts from 1.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from steerlsp import guard
from steerlsp.models.deprecation.text import deprecation_notice, identifier_in, replacement_in

MAX_SOURCE_BYTES = 2 * 1024 * 1024
_MAX_REASON = 300

# "runtime": found by importing the module (opt-in, models/deprecation/runtime.py).
Source = Literal["decorator", "warning", "docstring", "runtime"]


@dataclass(frozen=True)
class Deprecation:
    reason: str  # the message, whitespace collapsed, at most 300 characters
    replacement: str | None  # a bare identifier (``model_dump``), when the source names one
    source: Source


@dataclass(frozen=True)
class DeprecatedDefinition:
    name: str
    line: int  # 0-based line of the ``def``/``class`` keyword or assignment target
    first_line: int  # 0-based line of the first decorator (== line when undecorated)
    deprecation: Deprecation


# Modules whose ``deprecated`` is a deprecation decorator, for ``import ... as`` aliases.
_DECORATOR_MODULES = frozenset(
    {"warnings", "typing_extensions", "deprecated", "deprecated.classic", "deprecated.sphinx"}
    | {"deprecation"}
)
# Any decorator spelt so counts: libraries have their own (matplotlib's ``_api.deprecated``).
_DECORATOR_NAMES = frozenset({"deprecated", "deprecate"})
_CATEGORIES = frozenset({"DeprecationWarning", "FutureWarning", "PendingDeprecationWarning"})
_HELPER = re.compile(
    r"(?:(?:warn|emit|raise|issue|show|log)_)?deprecat(?:e|ed|ion)(?:_warn(?:ing)?)?"
)
_REASON_KEYWORDS = ("reason", "message", "msg", "details", "extra")
_REPLACEMENT_KEYWORDS = (
    "alternative",
    "instead",
    "replacement",
    "new_name",
    "use_instead",
    "alternative_name",
)


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
        _scan_scope(tree.body, _Names.of(tree, python), found)
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


_default_cache = DeprecationCache()


def deprecation_at(
    path: str | os.PathLike[str], line: int, name: str | None = None
) -> Deprecation | None:
    """``deprecation_in_source`` for a file, through a shared bounded cache."""
    return _default_cache.of(path, line, name)


# --- what the module imported under which name ---------------------------------------


@dataclass
class _Names:
    decorators: set[str]  # other names bound to a deprecation decorator (``as dep``)
    overloads: set[str]
    constants: dict[str, str]  # module-level ``NAME = "text"``
    python: tuple[int, int] | None  # the version ``sys.version_info`` tests are decided for

    @classmethod
    def of(cls, tree: ast.Module, python: tuple[int, int] | None = None) -> _Names:
        # Imports under ``try``/``if`` count: the PEP 702 fallbacks sit there.
        names = cls(set(), {"overload"}, {}, python)
        for node in _statements(tree.body, None):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, text = node.targets[0], _text(node.value)
                if isinstance(target, ast.Name) and text is not None:
                    names.constants[target.id] = text
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if node.module in _DECORATOR_MODULES and alias.name == "deprecated":
                        names.decorators.add(bound)
                    elif (
                        node.module in ("typing", "typing_extensions") and alias.name == "overload"
                    ):
                        names.overloads.add(bound)
        return names


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _last(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _text(node: ast.AST | None, constants: dict[str, str] | None = None) -> str | None:
    """The literal text of a string expression; ``{...}`` for what is computed.

    A name is looked up in the module's string ``constants``
    (``warnings.warn(DEPRECATION_MESSAGE, FutureWarning)``).
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and constants:
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v, constants) or "{...}" for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return None
    if isinstance(node, ast.BinOp):
        left = _text(node.left, constants)
        if isinstance(node.op, ast.Add):
            right = _text(node.right, constants)
            return left + right if left is not None and right is not None else left or right
        return left  # "..." % args
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _text(node.func.value, constants)  # "...".format(args)
    return None


def _clean(reason: str) -> str:
    return " ".join(reason.split())[:_MAX_REASON]


def _argument(call: ast.Call, index: int, keywords: tuple[str, ...]) -> ast.expr | None:
    if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    return None


def _deprecation(reason: str | None, replacement: str | None, source: Source) -> Deprecation:
    reason = _clean(reason or "deprecated")
    return Deprecation(reason, replacement or replacement_in(reason), source)


def _stated_replacement(call: ast.Call, names: _Names) -> str | None:
    for keyword in call.keywords:
        if keyword.arg in _REPLACEMENT_KEYWORDS:
            text = _text(keyword.value, names.constants)
            if text:
                return identifier_in(text, quoted=True) or replacement_in(text)
    return None


# --- the three kinds of evidence ------------------------------------------------------


def _is_deprecation_decorator(func: ast.AST, names: _Names) -> bool:
    dotted = _dotted(func)
    if dotted is None:
        return False
    head, _, last = dotted.rpartition(".")
    return last.lstrip("_") in _DECORATOR_NAMES or (not head and last in names.decorators)


def _decorator_deprecation(decorators: list[ast.expr], names: _Names) -> Deprecation | None:
    for decorator in decorators:
        call = decorator if isinstance(decorator, ast.Call) else None
        if not _is_deprecation_decorator(call.func if call else decorator, names):
            continue
        if call is None:
            return _deprecation(None, None, "decorator")
        reason = _text(_argument(call, 0, _REASON_KEYWORDS), names.constants)
        return _deprecation(reason, _stated_replacement(call, names), "decorator")
    return None


def _is_category(node: ast.AST | None) -> bool:
    name = _last(node.func if isinstance(node, ast.Call) else node) if node else ""
    return (
        name in _CATEGORIES
        or "deprecat" in name.lower()
        or (name.startswith("RemovedIn") and name.endswith("Warning"))
    )


def _mentions_deprecation(text: str | None) -> bool:
    return text is not None and "deprecat" in text.lower()


def _warning_deprecation(call: ast.Call, names: _Names) -> Deprecation | None:
    """A call that issues a deprecation warning, by one of the spellings libraries use."""
    func = call.func
    name = _last(func)
    if name in ("warn", "warn_explicit"):
        message = _argument(call, 0, ("message",))
        category = _argument(call, 1, ("category",))
        if isinstance(message, ast.Call) and _is_category(message):
            category, message = message, _argument(message, 0, ())
        text = _text(message, names.constants)
        if _is_category(category) or _mentions_deprecation(text):
            return _deprecation(text, None, "warning")
        return None
    if name in ("emit", "warn") and isinstance(func, ast.Attribute) and _is_category(func.value):
        # setuptools: SetuptoolsDeprecationWarning.emit(summary, details)
        parts = [t for t in (_text(a, names.constants) for a in call.args) if t]
        return _deprecation(" ".join(parts) or None, None, "warning")
    if _HELPER.fullmatch(name.lower().lstrip("_")):
        reason = _text(_argument(call, 0, _REASON_KEYWORDS), names.constants)
        return _deprecation(reason, _stated_replacement(call, names), "warning")
    return None


def _unconditional(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body that run on every call, up to its first return or raise."""
    for statement in body:
        if isinstance(statement, ast.With | ast.AsyncWith | ast.Try):
            yield from _unconditional(statement.body)
        elif isinstance(statement, ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign):
            yield statement
        elif isinstance(statement, ast.Return | ast.Raise):
            yield statement
            return


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls evaluated by an expression, not those in lambdas or conditional branches."""
    if isinstance(node, ast.Lambda | ast.IfExp | ast.BoolOp):
        return
    if isinstance(node, ast.Call):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from _calls(child)


def _body_deprecation(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: _Names
) -> Deprecation | None:
    for statement in _unconditional(function.body):
        for call in _calls(statement):
            found = _warning_deprecation(call, names)
            if found:
                return found
    return None


def _docstring_deprecation(node: ast.AST, name: str) -> Deprecation | None:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return None
    docstring = ast.get_docstring(node, clean=True)
    notice = deprecation_notice(docstring, name) if docstring else None
    return _deprecation(notice, None, "docstring") if notice else None


def _own_deprecation(node: ast.stmt, names: _Names) -> Deprecation | None:
    """Decorator, then body, then docstring; the replacement from whichever names one."""
    found: list[Deprecation] = []
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        for check in (
            _decorator_deprecation(node.decorator_list, names),
            _body_deprecation(node, names),
            _docstring_deprecation(node, node.name),
        ):
            if check:
                found.append(check)
    elif isinstance(node, ast.ClassDef):
        constructors = [
            _body_deprecation(item, names)
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name in ("__init__", "__new__")
        ]
        for check in (
            _decorator_deprecation(node.decorator_list, names),
            next((c for c in constructors if c), None),
            _docstring_deprecation(node, node.name),
        ):
            if check:
                found.append(check)
    if not found:
        return None
    replacement = next((f.replacement for f in found if f.replacement), None)
    return Deprecation(found[0].reason, replacement, found[0].source)


def _assignment_deprecation(node: ast.Assign, names: _Names) -> Deprecation | None:
    """``assertEquals = _deprecate(assertEqual)``, ``old = deprecated("...")(new)``."""
    call = node.value
    if not isinstance(call, ast.Call):
        return None
    wrapped = call.args[0] if call.args else None
    found: Deprecation | None = None
    if isinstance(call.func, ast.Call):
        found = _decorator_deprecation([call.func], names)
    elif _HELPER.fullmatch(_last(call.func).lower().lstrip("_")) or _is_deprecation_decorator(
        call.func, names
    ):
        found = _warning_deprecation(call, names) if _text(wrapped, names.constants) else None
        found = found or _deprecation(None, _stated_replacement(call, names), "warning")
    if found is None:
        return None
    if found.replacement is None and isinstance(wrapped, ast.Name | ast.Attribute):
        alias = _last(wrapped)
        reason = found.reason if found.reason != "deprecated" else f"deprecated alias of {alias}"
        found = Deprecation(reason, alias, found.source)
    return found


# --- scopes: module and class bodies --------------------------------------------------


def _statements(body: list[ast.stmt], python: tuple[int, int] | None) -> Iterator[ast.stmt]:
    """A scope's statements, including those under ``if``/``try``/``with`` at its level.

    ``if sys.version_info >= (3, 12):`` is decided for ``python`` when given,
    as type checkers do (stubs deprecate by version); otherwise both branches count.
    """
    for statement in body:
        if isinstance(statement, ast.If):
            taken = _version_test(statement.test, python)
            if taken is not False:
                yield from _statements(statement.body, python)
            if taken is not True:
                yield from _statements(statement.orelse, python)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _statements(block, python)
            for handler in statement.handlers:
                yield from _statements(handler.body, python)
        elif isinstance(statement, ast.With):
            yield from _statements(statement.body, python)
        else:
            yield statement


_COMPARISONS = {
    ast.Lt: tuple.__lt__,
    ast.LtE: tuple.__le__,
    ast.Gt: tuple.__gt__,
    ast.GtE: tuple.__ge__,
    ast.Eq: tuple.__eq__,
    ast.NotEq: tuple.__ne__,
}


def _version_test(test: ast.expr, python: tuple[int, int] | None) -> bool | None:
    """``sys.version_info >= (3, 12)`` for ``python``; None when it is not such a test."""
    if python is None:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _version_test(test.operand, python)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left = test.left.value if isinstance(test.left, ast.Subscript) else test.left
    compare = _COMPARISONS.get(type(test.ops[0]))
    if _dotted(left) not in ("sys.version_info", "version_info") or compare is None:
        return None
    try:
        bound = ast.literal_eval(test.comparators[0])
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    if not (isinstance(bound, tuple) and all(isinstance(v, int) for v in bound)):
        return None
    return bool(compare(python[: len(bound)], bound))


def _decorator_names(node: ast.stmt | ast.expr) -> list[str]:
    return [_dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in _decorators(node)]


def _decorators(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.decorator_list
    return []


def _scan_scope(body: list[ast.stmt], names: _Names, found: list[DeprecatedDefinition]) -> None:
    definitions: list[tuple[str, ast.stmt | ast.expr, Deprecation | None]] = []
    for node in _statements(body, names.python):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            definitions.append((node.name, node, _own_deprecation(node, names)))
            if isinstance(node, ast.ClassDef):
                _scan_scope(node.body, names, found)
        elif isinstance(node, ast.Assign):
            deprecation = _assignment_deprecation(node, names)
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
                first = min([defined.lineno, *(d.lineno for d in _decorators(defined))])
                found.append(DeprecatedDefinition(name, defined.lineno - 1, first - 1, deprecation))


def _group_deprecation(
    group: list[tuple[ast.stmt | ast.expr, Deprecation | None]], names: _Names
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
        return any(n.rsplit(".", 1)[-1].lstrip("_") in wanted for n in _decorator_names(node))

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
