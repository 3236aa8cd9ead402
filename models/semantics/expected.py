"""expectedType: the annotation the expression at the cursor must satisfy.

Only annotations count: a return annotation, an annotated variable or field, a
parameter's annotation on the called function (found through Jedi, see
``Lookup``), a typed container's element type. Nothing is inferred from values,
so "no annotation" is "no answer".
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from steerlsp.models.semantics import typetext
from steerlsp.models.semantics.hole import Hole

_MAX_DEPTH = 12
_MAX_ALIASES = 3  # SkuMap = Mapping_ = dict[...]: aliases followed to find an element type
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class Annotation:
    """An annotation as written, and where: the flattened text is the answer, the raw
    text and its start let the type names in it be resolved where they are written."""

    text: str  # flattened, forward-reference quotes gone: "list[Item]"
    raw: str  # as written
    path: str
    line: int  # 0-based line of raw's start
    column: int  # code-point column of raw's start
    exact: bool = True  # False: raw is inside a string, its names are not at their place


@dataclass(frozen=True)
class Expected:
    """The expected type found at a hole, with where its annotation is written."""

    annotation: Annotation
    origin: str  # "return", "yield", "assignment", "attribute", "argument", "default", "element"


class Lookup(Protocol):
    """What the hole's own file cannot tell: the Jedi side of expectedType."""

    def parameter(
        self, line: int, column: int, index: int | None, keyword: str | None
    ) -> Annotation | None:
        """The annotation of the parameter that the ``index``-th positional argument (or
        the ``keyword`` argument) binds to, for the call whose ``(`` ends just before
        0-based ``line`` and ``column`` in the current document."""
        ...

    def attribute(self, line: int, column: int, name: str) -> Annotation | None:
        """The declared annotation of attribute ``name`` on the object whose expression
        ends at 0-based ``line`` and ``column`` in the current document."""
        ...

    def alias(self, annotation: Annotation) -> Annotation | None:
        """What a type alias (``SkuMap = dict[str, Item]``) stands for, as written at
        the alias; None if ``annotation`` is not the name of one."""
        ...


def expected_at(hole: Hole, path: str, lookup: Lookup) -> Expected | None:
    """The expected type of the hole's expression, or None when no annotation says."""
    return _expected(hole.node, hole, path, lookup, 0)


def _expected(node: ast.AST, hole: Hole, path: str, lookup: Lookup, depth: int) -> Expected | None:
    parent = hole.parent(node)
    if parent is None or depth > _MAX_DEPTH:
        return None
    if isinstance(parent, ast.Return) and parent.value is node:
        return _returned(parent, hole, path)
    if isinstance(parent, ast.Yield) and parent.value is node:
        return _yielded(parent, hole, path)
    if isinstance(parent, ast.AnnAssign) and parent.value is node:
        return _found(parent.annotation, hole, path, "assignment")
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
        return _assigned(parent.targets[0], hole, path, lookup)
    if isinstance(parent, ast.Call) and node in parent.args:
        return _argument(parent, hole, lookup, parent.args.index(node), None)  # type: ignore[arg-type]
    if isinstance(parent, ast.keyword) and parent.arg is not None:
        call = hole.parent(parent)
        if isinstance(call, ast.Call):
            return _argument(call, hole, lookup, None, parent.arg)
    if isinstance(parent, ast.arguments):
        return _default(parent, node, hole, path)
    if isinstance(parent, ast.IfExp) and node is not parent.test:
        return _expected(parent, hole, path, lookup, depth + 1)
    return _element(parent, node, hole, path, lookup, depth)


def _returned(statement: ast.Return, hole: Hole, path: str) -> Expected | None:
    function = _function_of(statement, hole)
    if function is None or function.returns is None:
        return None
    found = _found(function.returns, hole, path, "return")
    if found is None:
        return None
    text = found.annotation.text
    if _is_generator(function) or typetext.is_generator_annotation(text):
        return _inner(found, typetext.generator_returns, "return")
    return found


def _yielded(expression: ast.Yield, hole: Hole, path: str) -> Expected | None:
    function = _function_of(expression, hole)
    if function is None or function.returns is None:
        return None
    found = _found(function.returns, hole, path, "yield")
    if found is None:
        return None
    return _inner(found, typetext.yielded, "yield")


def _assigned(target: ast.expr, hole: Hole, path: str, lookup: Lookup) -> Expected | None:
    if isinstance(target, ast.Name):
        declared = _declared(target.id, target, hole)
        return _found(declared, hole, path, "assignment") if declared is not None else None
    if not isinstance(target, ast.Attribute):
        return None
    declared = _declared_on_self(target, hole)
    if declared is not None:
        return _found(declared, hole, path, "attribute")
    line = (target.value.end_lineno or 1) - 1
    column = hole.column(line + 1, target.value.end_col_offset or 0)
    annotation = lookup.attribute(line, column, target.attr)
    return Expected(annotation, "attribute") if annotation is not None else None


def _argument(
    call: ast.Call, hole: Hole, lookup: Lookup, index: int | None, keyword: str | None
) -> Expected | None:
    if index is not None and any(isinstance(arg, ast.Starred) for arg in call.args[:index]):
        return None  # *args before: which parameter this binds to is unknown
    if index is not None and isinstance(call.args[index], ast.Starred):
        return None
    where = _open_paren(call, hole)
    if where is None:
        return None
    annotation = lookup.parameter(where[0], where[1], index, keyword)
    return Expected(annotation, "argument") if annotation is not None else None


def _default(arguments: ast.arguments, node: ast.AST, hole: Hole, path: str) -> Expected | None:
    positional = [*arguments.posonlyargs, *arguments.args]
    parameter: ast.arg | None = None
    if node in arguments.defaults:
        offset = len(positional) - len(arguments.defaults)
        parameter = positional[offset + arguments.defaults.index(node)]  # type: ignore[arg-type]
    elif node in arguments.kw_defaults:
        parameter = arguments.kwonlyargs[arguments.kw_defaults.index(node)]  # type: ignore[arg-type]
    if parameter is None or parameter.annotation is None:
        return None
    return _found(parameter.annotation, hole, path, "default")


def _element(
    parent: ast.AST, node: ast.AST, hole: Hole, path: str, lookup: Lookup, depth: int
) -> Expected | None:
    if isinstance(node, ast.Starred):
        return None
    kind: str | None = None
    index = 0
    if isinstance(parent, ast.List) or (isinstance(parent, ast.ListComp) and node is parent.elt):
        kind = "list"
    elif isinstance(parent, ast.Set) or (isinstance(parent, ast.SetComp) and node is parent.elt):
        kind = "set"
    elif isinstance(parent, ast.Tuple):
        kind, index = "tuple", parent.elts.index(node)  # type: ignore[arg-type]
    elif isinstance(parent, ast.Dict | ast.DictComp):
        kind = _dict_side(parent, node)
    if kind is None:
        return None
    container = _expected(parent, hole, path, lookup, depth + 1)
    side = kind

    def pick(text: str) -> ast.expr | None:
        return typetext.element(text, side, index)

    for _ in range(_MAX_ALIASES):
        if container is None:
            return None
        if pick(container.annotation.text) is not None:
            return _inner(container, pick, "element")
        expanded = lookup.alias(container.annotation)
        container = Expected(expanded, container.origin) if expanded is not None else None
    return None


def _dict_side(parent: ast.Dict | ast.DictComp, node: ast.AST) -> str | None:
    if isinstance(parent, ast.DictComp):
        return "dict_key" if node is parent.key else "dict_value" if node is parent.value else None
    if any(key is node for key in parent.keys):
        return "dict_key"
    return "dict_value" if any(value is node for value in parent.values) else None


def _declared(name: str, at: ast.AST, hole: Hole) -> ast.expr | None:
    """The annotation ``name`` was declared with in the scope around ``at``: an annotated
    assignment there, or a parameter of the enclosing function."""
    scope = next((a for a in hole.ancestors(at) if isinstance(a, (*_SCOPES, ast.Module))), None)
    if scope is None or isinstance(scope, ast.Lambda):
        return None
    for statement in _scope_nodes(scope):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        ):
            return statement.annotation
    if isinstance(scope, _FUNCTIONS):
        for parameter in _parameters(scope.args):
            if parameter.arg == name and parameter.annotation is not None:
                return parameter.annotation
    return None


def _declared_on_self(target: ast.Attribute, hole: Hole) -> ast.expr | None:
    """``self.x = |`` in a method: the class body's ``x: T`` or a ``self.x: T = ...``."""
    if not isinstance(target.value, ast.Name):
        return None
    function = next((a for a in hole.ancestors(target) if isinstance(a, _SCOPES)), None)
    if not isinstance(function, _FUNCTIONS):
        return None
    receiver = _parameters(function.args)[:1]
    owner = hole.parent(function)
    if not receiver or receiver[0].arg != target.value.id or not isinstance(owner, ast.ClassDef):
        return None
    for field in owner.body:
        if isinstance(field, ast.AnnAssign) and _is_name(field.target, target.attr):
            return field.annotation
    for method in (s for s in owner.body if isinstance(s, _FUNCTIONS)):
        for node in _scope_nodes(method):
            if isinstance(node, ast.AnnAssign) and _is_self_attribute(
                node.target, _parameters(method.args)[:1], target.attr
            ):
                return node.annotation
    return None


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_self_attribute(node: ast.expr, receiver: list[ast.arg], attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and bool(receiver)
        and node.value.id == receiver[0].arg
    )


def _function_of(node: ast.AST, hole: Hole) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope = next((a for a in hole.ancestors(node) if isinstance(a, _SCOPES)), None)
    return scope if isinstance(scope, _FUNCTIONS) else None


def _is_generator(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(node, ast.Yield | ast.YieldFrom) for node in _scope_nodes(function))


def _scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope``'s own body, not those of functions or classes inside it."""
    found: list[ast.AST] = []
    pending = list(getattr(scope, "body", []))
    while pending:
        node = pending.pop(0)
        found.append(node)
        if not isinstance(node, _SCOPES):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _parameters(arguments: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, *extra]


def _open_paren(call: ast.Call, hole: Hole) -> tuple[int, int] | None:
    """0-based line and column just after the call's ``(``."""
    lines = hole.text.split("\n")
    line = (call.func.end_lineno or 1) - 1
    column = hole.column(line + 1, call.func.end_col_offset or 0)
    while line < len(lines):
        found = lines[line].find("(", column)
        if found >= 0:
            return line, found + 1
        line, column = line + 1, 0
    return None


def _found(node: ast.expr, hole: Hole, path: str, origin: str) -> Expected | None:
    raw = hole.segment(node)
    if raw is None:
        return None
    text = typetext.unquoted(typetext.flat(raw))
    if not text:
        return None
    line = (node.lineno or 1) - 1
    column = hole.column(node.lineno, node.col_offset)
    return Expected(Annotation(text, raw, path, line, column), origin)


def _inner(outer: Expected, pick: Callable[[str], ast.expr | None], origin: str) -> Expected | None:
    """The part of ``outer``'s annotation that ``pick`` chooses (``Item`` in
    ``list[Item]``), as its own annotation, placed where that part is written."""
    whole = outer.annotation
    quoted = isinstance(typetext.parse(whole.raw), ast.Constant)
    source = whole.text if quoted or not whole.exact else whole.raw
    node = pick(source)
    raw = ast.get_source_segment(source, node) if node is not None else None
    if node is None or raw is None:
        return None
    text = typetext.unquoted(typetext.flat(raw))
    if source is whole.text and (quoted or not whole.exact):
        return Expected(replace(whole, text=text, raw=raw, exact=False), origin)
    line = whole.line + node.lineno - 1
    prefix = source.split("\n")[node.lineno - 1].encode("utf-8")[: node.col_offset]
    column = len(prefix.decode("utf-8", "replace"))
    if node.lineno == 1:
        column += whole.column
    return Expected(Annotation(text, raw, whole.path, line, column), origin)
