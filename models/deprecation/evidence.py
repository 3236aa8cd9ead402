"""The evidence that one definition is deprecated: a decorator, a warning, a docstring.

Each check reads one ``def``/``class`` or assignment against what its module
imported (:class:`ModuleNames`) and returns a :class:`Deprecation` or None; the
order of strength is in ``static.py``'s docstring.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from steerlsp.models.deprecation.syntax import argument, dotted, last_name, literal_text, statements
from steerlsp.models.deprecation.text import deprecation_notice, identifier_in, replacement_in

_MAX_REASON = 300

# "runtime": found by importing the module (opt-in, models/deprecation/runtime.py).
Source = Literal["decorator", "warning", "docstring", "runtime"]


@dataclass(frozen=True)
class Deprecation:
    reason: str  # the message, whitespace collapsed, at most 300 characters
    replacement: str | None  # a bare identifier (``model_dump``), when the source names one
    source: Source


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


# --- what the module imported under which name ---------------------------------------


@dataclass
class ModuleNames:
    """What a module bound at its top: the names evidence is read against."""

    decorators: set[str]  # other names bound to a deprecation decorator (``as dep``)
    overloads: set[str]
    constants: dict[str, str]  # module-level ``NAME = "text"``
    python: tuple[int, int] | None  # the version ``sys.version_info`` tests are decided for

    @classmethod
    def of(cls, tree: ast.Module, python: tuple[int, int] | None = None) -> ModuleNames:
        # Imports under ``try``/``if`` count: the PEP 702 fallbacks sit there.
        names = cls(set(), {"overload"}, {}, python)
        for node in statements(tree.body, None):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, text = node.targets[0], literal_text(node.value)
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


def _clean(reason: str) -> str:
    return " ".join(reason.split())[:_MAX_REASON]


def _deprecation(reason: str | None, replacement: str | None, source: Source) -> Deprecation:
    reason = _clean(reason or "deprecated")
    return Deprecation(reason, replacement or replacement_in(reason), source)


def _stated_replacement(call: ast.Call, names: ModuleNames) -> str | None:
    for keyword in call.keywords:
        if keyword.arg in _REPLACEMENT_KEYWORDS:
            text = literal_text(keyword.value, names.constants)
            if text:
                return identifier_in(text, quoted=True) or replacement_in(text)
    return None


# --- the three kinds of evidence ------------------------------------------------------


def _is_deprecation_decorator(func: ast.AST, names: ModuleNames) -> bool:
    spelt = dotted(func)
    if spelt is None:
        return False
    head, _, last = spelt.rpartition(".")
    return last.lstrip("_") in _DECORATOR_NAMES or (not head and last in names.decorators)


def _decorator_deprecation(decorators: list[ast.expr], names: ModuleNames) -> Deprecation | None:
    for decorator in decorators:
        call = decorator if isinstance(decorator, ast.Call) else None
        if not _is_deprecation_decorator(call.func if call else decorator, names):
            continue
        if call is None:
            return _deprecation(None, None, "decorator")
        reason = literal_text(argument(call, 0, _REASON_KEYWORDS), names.constants)
        return _deprecation(reason, _stated_replacement(call, names), "decorator")
    return None


def _is_category(node: ast.AST | None) -> bool:
    name = last_name(node.func if isinstance(node, ast.Call) else node) if node else ""
    return (
        name in _CATEGORIES
        or "deprecat" in name.lower()
        or (name.startswith("RemovedIn") and name.endswith("Warning"))
    )


def _mentions_deprecation(text: str | None) -> bool:
    return text is not None and "deprecat" in text.lower()


def _warning_deprecation(call: ast.Call, names: ModuleNames) -> Deprecation | None:
    """A call that issues a deprecation warning, by one of the spellings libraries use."""
    func = call.func
    name = last_name(func)
    if name in ("warn", "warn_explicit"):
        message = argument(call, 0, ("message",))
        category = argument(call, 1, ("category",))
        if isinstance(message, ast.Call) and _is_category(message):
            category, message = message, argument(message, 0, ())
        text = literal_text(message, names.constants)
        if _is_category(category) or _mentions_deprecation(text):
            return _deprecation(text, None, "warning")
        return None
    if name in ("emit", "warn") and isinstance(func, ast.Attribute) and _is_category(func.value):
        # setuptools: SetuptoolsDeprecationWarning.emit(summary, details)
        parts = [t for t in (literal_text(a, names.constants) for a in call.args) if t]
        return _deprecation(" ".join(parts) or None, None, "warning")
    if _HELPER.fullmatch(name.lower().lstrip("_")):
        reason = literal_text(argument(call, 0, _REASON_KEYWORDS), names.constants)
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
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: ModuleNames
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


def own_deprecation(node: ast.stmt, names: ModuleNames) -> Deprecation | None:
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


def assignment_deprecation(node: ast.Assign, names: ModuleNames) -> Deprecation | None:
    """``assertEquals = _deprecate(assertEqual)``, ``old = deprecated("...")(new)``."""
    call = node.value
    if not isinstance(call, ast.Call):
        return None
    wrapped = call.args[0] if call.args else None
    found: Deprecation | None = None
    if isinstance(call.func, ast.Call):
        found = _decorator_deprecation([call.func], names)
    elif _HELPER.fullmatch(last_name(call.func).lower().lstrip("_")) or _is_deprecation_decorator(
        call.func, names
    ):
        found = (
            _warning_deprecation(call, names) if literal_text(wrapped, names.constants) else None
        )
        found = found or _deprecation(None, _stated_replacement(call, names), "warning")
    if found is None:
        return None
    if found.replacement is None and isinstance(wrapped, ast.Name | ast.Attribute):
        alias = last_name(wrapped)
        reason = found.reason if found.reason != "deprecated" else f"deprecated alias of {alias}"
        found = Deprecation(reason, alias, found.source)
    return found
