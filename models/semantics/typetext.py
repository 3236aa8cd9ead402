"""Reading annotation text: flattening, element types, target types, matching.

Everything here is pure and works on the annotation's *text*, never on a
resolved type: ChatLSP reports types as the code writes them, so the answer
is only as good as the annotations, and nothing is inferred from values.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from parso.python.tokenize import tokenize

# Types a model knows by heart: never printed as definitions, never header targets.
BUILTIN_NAMES = frozenset(
    {
        *("str", "int", "float", "bool", "bytes", "bytearray", "complex", "object", "None"),
        *("list", "dict", "set", "frozenset", "tuple", "type", "range", "slice", "memoryview"),
        *("Any", "Optional", "Union", "List", "Dict", "Set", "FrozenSet", "Tuple", "Type"),
        *("Callable", "Iterable", "Iterator", "Generator", "AsyncGenerator", "AsyncIterator"),
        *("AsyncIterable", "Awaitable", "Coroutine", "Sequence", "MutableSequence", "Mapping"),
        *("MutableMapping", "Collection", "Container", "AbstractSet", "MutableSet", "Literal"),
        *("Final", "ClassVar", "Annotated", "TypeAlias", "Self", "NoReturn", "Never", "TypeVar"),
        *("DefaultDict", "OrderedDict", "Counter", "Deque", "deque", "defaultdict", "Hashable"),
        *("Reversible", "Sized", "TypeGuard", "Required", "NotRequired", "ParamSpec", "NewType"),
    }
)
# Plain scalars are never header targets (everything returns a str somewhere).
PLAIN_TARGETS = frozenset(
    {"str", "int", "bool", "float", "bytes", "None", "complex", "object", "Any"}
)

_LISTS = {"list", "List", "Sequence", "MutableSequence", "Iterable", "Collection", "Deque"}
_SETS = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet", "MutableSet", "Iterable"}
_SETS |= {"Collection"}
_TUPLES = {"tuple", "Tuple"}
_DICTS = {"dict", "Dict", "Mapping", "MutableMapping", "DefaultDict", "OrderedDict"}
_DICTS |= {"defaultdict"}
_YIELDERS = {"Generator", "Iterator", "Iterable", "AsyncGenerator", "AsyncIterator"}
_YIELDERS |= {"AsyncIterable"}
_CANONICAL_HEADS = {
    "List": "list",
    "Dict": "dict",
    "Set": "set",
    "FrozenSet": "frozenset",
    "Tuple": "tuple",
    "Type": "type",
}
_SPACE_BEFORE = re.compile(r"\s+([)\],:])")
_SPACE_AFTER = re.compile(r"([(\[])\s+")


def flat(code: str) -> str:
    """``code`` on one line: comments dropped, runs of whitespace made one space, none
    inside brackets' edges or before commas, so a multi-line annotation or header
    reads like a one-line one."""
    parts: list[str] = []
    for token in tokenize(code, version_info=(3, 12)):
        if not token.string or token.string.isspace():
            continue
        if parts and token.prefix:
            parts.append(" ")
        parts.append(token.string)
    text = "".join(parts).strip()
    text = _SPACE_BEFORE.sub(r"\1", text)
    return _SPACE_AFTER.sub(r"\1", text)


def parse(annotation: str) -> ast.expr | None:
    """The annotation as an expression, or None if it does not parse."""
    try:
        return ast.parse(annotation.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def unquoted(annotation: str) -> str:
    """A forward reference written as one string (``"Order"``) is the type it names."""
    node = parse(annotation)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        inner = node.value.strip()
        if inner and parse(inner) is not None:
            return flat(inner)
    return annotation


def head(node: ast.expr) -> str | None:
    """The generic's name without module prefix: ``typing.Optional[X]`` -> "Optional"."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def arguments(node: ast.expr) -> list[ast.expr]:
    """A subscript's type arguments, ``[]`` for anything else."""
    if not isinstance(node, ast.Subscript):
        return []
    inner = node.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def without_none(node: ast.expr) -> ast.expr:
    """``Optional[X]``, ``Union[X, None]`` and ``X | None`` are X where a value is built."""
    members = _union_members(node)
    if members is None:
        return node
    rest = [m for m in members if not _is_none(m)]
    return rest[0] if len(rest) == 1 and len(rest) < len(members) else node


def element(annotation: str, container: str, index: int) -> ast.expr | None:
    """The type an element of a literal must have, inside a value of ``annotation``.

    ``container`` is "list", "set", "tuple", "dict_key" or "dict_value"; ``index``
    the element's position (tuples only)."""
    node = parse(annotation)
    if node is None:
        return None
    node = without_none(node)
    name = head(node)
    args = arguments(node)
    if not args or name is None:
        return None
    if container == "list" and name in _LISTS and len(args) == 1:
        return args[0]
    if container == "set" and name in _SETS and len(args) == 1:
        return args[0]
    if container == "tuple" and name in _TUPLES:
        if len(args) == 2 and _is_ellipsis(args[1]):
            return args[0]
        return args[index] if index < len(args) and not _is_ellipsis(args[index]) else None
    if container == "tuple" and name in _LISTS and len(args) == 1:
        return args[0]
    if container in ("dict_key", "dict_value") and name in _DICTS and len(args) == 2:
        return args[0] if container == "dict_key" else args[1]
    if container == "set" and name in _DICTS and len(args) == 2:
        return args[0]  # `{k` is a set until its colon is typed
    return None


def yielded(annotation: str) -> ast.expr | None:
    """Y of ``Generator[Y, S, R]``, ``Iterator[Y]``, ``AsyncGenerator[Y, S]`` and kin."""
    node = parse(annotation)
    if node is None or head(node) not in _YIELDERS:
        return None
    args = arguments(node)
    return args[0] if args else None


def generator_returns(annotation: str) -> ast.expr | None:
    """R of ``Generator[Y, S, R]``: what ``return`` gives in a generator."""
    node = parse(annotation)
    if node is None or head(node) != "Generator":
        return None
    args = arguments(node)
    return args[2] if len(args) == 3 else None


def is_generator_annotation(annotation: str) -> bool:
    """Whether only a generator function can have this return annotation."""
    node = parse(annotation)
    return node is not None and head(node) in ("Generator", "AsyncGenerator")


def canonical(node: ast.expr) -> str:
    """One spelling per type for comparing: module prefixes dropped, ``List`` is
    ``list``, ``X | None`` and ``Union[X, None]`` are ``Optional[X]``, quotes gone."""
    return ast.unparse(_Canonical().visit(_copy(node)))


def targets(annotation: str) -> list[str]:
    """The header targets of an expected type, canonical: the type itself, one level
    deeper (type arguments, Optional's X, union members, tuple components), and a
    Callable's return type. Plain scalars are dropped."""
    node = parse(unquoted(annotation))
    if node is None:
        return []
    found = [node, *_one_level_deeper(node)]
    if head(node) in ("tuple", "Tuple", "Callable"):
        for part in found[1:]:  # a component is a target: its Optional's X is one too
            members = _union_members(part)
            found.extend(m for m in members or [] if not _is_none(m))
    out: list[str] = []
    for item in found:
        text = canonical(item)
        if text not in out and text not in PLAIN_TARGETS and text != "...":
            out.append(text)
    return out


def produces(returns: str, wanted: list[str]) -> bool:
    """Whether a return annotation is a wanted target or contains one
    (``list[Item]`` and ``Optional[Item]`` contain ``Item``)."""
    node = parse(unquoted(returns))
    if node is None:
        return False
    parts = {canonical(sub) for sub in _subexpressions(_Canonical().visit(_copy(node)))}
    return any(target in parts for target in wanted)


def names(node: ast.expr) -> Iterator[ast.expr]:
    """The type names an annotation mentions (Name or dotted Attribute nodes), in
    reading order; Literal's values and Annotated's metadata are not types."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        yield node
    elif isinstance(node, ast.Subscript):
        name = head(node)
        yield from names(node.value)
        args = arguments(node)
        if name == "Literal":
            return
        if name == "Annotated":
            args = args[:1]
        for arg in args:
            yield from names(arg)
    elif isinstance(node, ast.BinOp):
        yield from names(node.left)
        yield from names(node.right)
    elif isinstance(node, ast.List | ast.Tuple):
        for item in node.elts:
            yield from names(item)


def dotted(node: ast.expr) -> str | None:
    """``a.b.C`` for a Name or Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _one_level_deeper(node: ast.expr) -> list[ast.expr]:
    members = _union_members(node)
    if members is not None:
        return [m for m in members if not _is_none(m)]
    name = head(node)
    args = arguments(node)
    if name == "Callable" and args:
        return [args[-1]]
    if name in ("Literal", "Annotated"):
        return args[:1] if name == "Annotated" else []
    return [a for a in args if not _is_ellipsis(a) and not isinstance(a, ast.List)]


def _union_members(node: ast.expr) -> list[ast.expr] | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _union_members(node.left) or [node.left]
        right = _union_members(node.right) or [node.right]
        return left + right
    name = head(node)
    if name == "Optional":
        return [*arguments(node), ast.Constant(None)]
    if name == "Union":
        return arguments(node)
    return None


def _subexpressions(node: ast.expr) -> Iterator[ast.expr]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.expr) and not isinstance(sub, ast.Load | ast.Tuple):
            yield sub


def _is_none(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or (
        isinstance(node, ast.Name) and node.id == "None"
    )


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


class _Canonical(ast.NodeTransformer):
    """The rewrite behind ``canonical``."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return ast.Name(id=node.attr, ctx=ast.Load())

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            inner = parse(node.value)
            if inner is not None:
                return self.visit(inner)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name):
            node.value.id = _CANONICAL_HEADS.get(node.value.id, node.value.id)
        return self._optional(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        return self._optional(node)

    def _optional(self, node: ast.expr) -> ast.expr:
        members = _union_members(node)
        if members is None or head(node) == "Optional":
            return node
        rest = [m for m in members if not _is_none(m)]
        if len(rest) == 1 and len(rest) < len(members):
            return ast.Subscript(
                value=ast.Name(id="Optional", ctx=ast.Load()), slice=rest[0], ctx=ast.Load()
            )
        return node
