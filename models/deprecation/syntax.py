"""The syntax the static deprecation reader looks at: names, literal text, scopes.

Pure ``ast`` helpers, no notion of deprecation: what a dotted name or a string
expression spells, a call's argument, and the statements a scope runs for a
given Python version.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def last_name(node: ast.AST) -> str:
    """``c`` for ``a.b.c`` or ``c``; "" for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def literal_text(node: ast.AST | None, constants: dict[str, str] | None = None) -> str | None:
    """The literal text of a string expression; ``{...}`` for what is computed.

    A name is looked up in the module's string ``constants``
    (``warnings.warn(DEPRECATION_MESSAGE, FutureWarning)``).
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and constants:
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(literal_text(v, constants) or "{...}" for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return None
    if isinstance(node, ast.BinOp):
        left = literal_text(node.left, constants)
        if isinstance(node.op, ast.Add):
            right = literal_text(node.right, constants)
            return left + right if left is not None and right is not None else left or right
        return left  # "..." % args
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return literal_text(node.func.value, constants)  # "...".format(args)
    return None


def argument(call: ast.Call, index: int, keywords: tuple[str, ...]) -> ast.expr | None:
    """The call's positional argument ``index``, else its first keyword in ``keywords``."""
    if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    return None


def statements(body: list[ast.stmt], python: tuple[int, int] | None) -> Iterator[ast.stmt]:
    """A scope's statements, including those under ``if``/``try``/``with`` at its level.

    ``if sys.version_info >= (3, 12):`` is decided for ``python`` when given,
    as type checkers do (stubs deprecate by version); otherwise both branches count.
    """
    for statement in body:
        if isinstance(statement, ast.If):
            taken = _version_test(statement.test, python)
            if taken is not False:
                yield from statements(statement.body, python)
            if taken is not True:
                yield from statements(statement.orelse, python)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from statements(block, python)
            for handler in statement.handlers:
                yield from statements(handler.body, python)
        elif isinstance(statement, ast.With):
            yield from statements(statement.body, python)
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
    if dotted(left) not in ("sys.version_info", "version_info") or compare is None:
        return None
    try:
        bound = ast.literal_eval(test.comparators[0])
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    if not (isinstance(bound, tuple) and all(isinstance(v, int) for v in bound)):
        return None
    return bool(compare(python[: len(bound)], bound))


def decorator_names(node: ast.stmt | ast.expr) -> list[str]:
    """The dotted names of the decorators (of a call, its callee); "" where not a name."""
    return [dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in decorators_of(node)]


def decorators_of(node: ast.AST) -> list[ast.expr]:
    """The decorators of a ``def`` or ``class``; none for anything else."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.decorator_list
    return []
