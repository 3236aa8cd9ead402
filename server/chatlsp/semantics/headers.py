"""relevantHeaders: the functions, methods and constructors in scope that can
produce the expected type (Hazel's §2.6, for Python).

Targets are the expected type, one level deeper (type arguments, Optional's X,
union members, tuple components), a Callable's return type, and the same for what
an alias among them stands for (``LineItems = list[LineItem]``); plain scalars are
not targets. A candidate matches when its return annotation (a constructor: its
class) is a target or contains one.

Candidates, closest first: the enclosing class's methods, then the module's
functions, constructors and methods by distance to the cursor (the function being
written included: a recursive call is a call), then what the module imports
(functions, classes, and the functions and classes of imported modules; not from
the standard library, whose API a model knows as it knows its types).

Printing: a method is ``def Inventory.restock(self, qty: int) -> Item: ...`` (the
qualified name, receiver kept), a constructor ``def Item(sku: str, qty: int = 0) ->
Item: ...``, a function of an imported module ``def models.make_item(...)``; the
``Header.name`` is that qualified name.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from steerlsp.models.semantics import typetext
from steerlsp.models.semantics.expected import Annotation, Lookup
from steerlsp.models.semantics.hole import Hole
from steerlsp.server.chatlsp import Header, Place
from steerlsp.server.chatlsp.semantics.classes import (
    NOT_CONSTRUCTED,
    base_names,
    built_from_fields,
    fields,
    members,
)
from steerlsp.server.chatlsp.semantics.printing import decorators, function_header, parameters
from steerlsp.server.chatlsp.semantics.sources import Sources
from steerlsp.server.chatlsp.semantics.typedefs import mentions

MAX_HEADERS = 10
_MAX_MODULE_MEMBERS = 400  # top-level definitions scanned in one imported module
_SHOWN_DECORATORS = ("property", "classmethod", "staticmethod", "cached_property")

Expand = Callable[[str], str | None]  # an alias name -> what it stands for, or None


@dataclass(frozen=True)
class _Candidate:
    name: str
    code: Callable[[], str | None]  # printed only once matched: a big module has many
    returns: str  # the return annotation; for a constructor, the class name
    place: Place | None
    constructor: bool = False
    factory: bool = False  # a class or static method


def expander(annotation: Annotation, lookup: Lookup) -> Expand:
    """What each name written in ``annotation`` stands for if it is an alias, looked
    up where the name is written."""
    named = {m.dotted.rsplit(".", 1)[-1]: m for m in mentions(annotation)}

    def expand(name: str) -> str | None:
        mention = named.get(name)
        if mention is None:
            return None
        start = mention.column - len(mention.dotted) + len(name)
        written = Annotation(
            mention.dotted, mention.dotted, mention.path, mention.line, start, mention.exact
        )
        alias = lookup.alias(written)
        return alias.text if alias is not None else None

    return expand


def targets(expected: str, expand: Expand) -> list[str]:
    """The canonical target types of ``expected``, aliases among them expanded once."""
    wanted = typetext.targets(expected)
    for target in list(wanted):
        if not target.isidentifier():
            continue
        stands_for = expand(target)
        if stands_for is not None:
            wanted.extend(t for t in typetext.targets(stands_for) if t not in wanted)
    return wanted


def relevant_headers(
    wanted: list[str], hole: Hole, path: str, cursor_line: int, sources: Sources
) -> list[Header]:
    """Up to ``MAX_HEADERS`` headers that produce one of ``wanted``, closest first."""
    if not wanted:
        return []
    heads = {t.split("[", 1)[0] for t in wanted}
    found: list[Header] = []
    seen: set[object] = set()
    for candidate in _candidates(hole, path, cursor_line, sources):
        if candidate.name in seen or candidate.place in seen:
            continue  # one definition reached twice (`Item` and `models.Item`): the closer
        if not typetext.produces(candidate.returns, wanted) and not (
            candidate.constructor and candidate.returns in heads
        ):
            continue
        code = candidate.code()
        if code is not None:
            seen.update((candidate.name, candidate.place))
            found.append(Header(candidate.name, code, candidate.place))
            if len(found) >= MAX_HEADERS:
                break
    return found


def _candidates(hole: Hole, path: str, cursor_line: int, sources: Sources) -> Iterator[_Candidate]:
    tree = sources.tree(path)
    if tree is None:
        return
    scopes = [_parso_scope(a, hole, path, sources) for a in hole.ancestors(hole.node)]
    owner = next((s for s in scopes if s is not None and s.type == "classdef"), None)

    def distance(candidate: _Candidate) -> int:
        line = candidate.place.line if candidate.place else 0
        return abs(line - cursor_line)

    if owner is not None:
        yield from sorted(_methods(owner, owner.name.value, path), key=distance)
    for scope in scopes:
        if scope is not None and scope.type == "funcdef":
            yield from (_function(n, n.name.value, path) for n in members(scope))
    local: list[_Candidate] = []
    for member in members(tree):
        if member.type == "funcdef":
            local.append(_function(member, member.name.value, path))
        else:
            local.extend(_class_candidates(member, member.name.value, path, sources, True))
    yield from sorted(local, key=distance)
    yield from _imported(tree, path, sources)


def _imported(tree: Any, path: str, sources: Sources) -> Iterator[_Candidate]:
    for statement in tree.iter_imports():
        if statement.is_star_import():
            continue
        for leaf, qualified in _imported_names(statement):
            line, column = leaf.start_pos
            for name in sources.goto(path, line - 1, column):
                yield from _from_name(name, qualified, sources)


def _imported_names(statement: Any) -> list[tuple[Any, str]]:
    """Each name an import binds, with the name code uses for it (``a.b`` for
    ``import a.b``)."""
    if statement.type == "import_from":
        return [(leaf, leaf.value) for leaf in statement.get_defined_names()]
    found = []
    for dotted, alias in zip(statement.get_paths(), statement.get_defined_names(), strict=False):
        if dotted[0] is alias:  # `import a.b`: code writes a.b
            found.append((dotted[-1], ".".join(leaf.value for leaf in dotted)))
        else:
            found.append((alias, alias.value))
    return found


def _from_name(name: Any, qualified: str, sources: Sources) -> Iterator[_Candidate]:
    if name.module_path is None or not name.line or sources.is_known(name):
        return  # the standard library's API is the model's to know, like its types
    module_path = str(name.module_path)
    if name.type == "module":
        tree = sources.tree(module_path)
        for member in members(tree)[:_MAX_MODULE_MEMBERS] if tree is not None else []:
            if member.name.value.startswith("_"):
                continue
            shown = f"{qualified}.{member.name.value}"
            if member.type == "funcdef":
                yield _function(member, shown, module_path)
            else:
                yield from _class_candidates(member, shown, module_path, sources, False)
        return
    leaf = sources.leaf(module_path, name.line, name.column)
    node = leaf.parent if leaf is not None else None
    if node is not None and node.type == "funcdef":
        yield _function(node, qualified, module_path)
    elif node is not None and node.type == "classdef":
        yield from _class_candidates(node, qualified, module_path, sources, False)


def _class_candidates(
    classdef: Any, shown: str, path: str, sources: Sources, every_method: bool
) -> Iterator[_Candidate]:
    """A class's constructor, and its methods: all of them for a class of this module,
    its class and static methods (``Item.from_row``) for an imported one."""

    def code() -> str | None:
        return _constructor(classdef, shown, path, sources)

    yield _Candidate(shown, code, classdef.name.value, _place(classdef, path), constructor=True)
    for method in _methods(classdef, shown, path):
        if every_method or method.factory:
            yield method


def _methods(classdef: Any, shown: str, path: str) -> list[_Candidate]:
    """A class's methods called by name (dunders are not)."""
    return [
        _function(m, f"{shown}.{m.name.value}", path)
        for m in members(classdef)
        if m.type == "funcdef" and not m.name.value.startswith("__")
    ]


def _function(function: Any, shown: str, path: str) -> _Candidate:
    shown_decorators = _shown_decorators(function)

    def code() -> str:
        return "\n".join([*shown_decorators, function_header(function, shown)])

    factory = any(d.startswith(("@classmethod", "@staticmethod")) for d in shown_decorators)
    return _Candidate(shown, code, _returns(function), _place(function, path), factory=factory)


def _constructor(classdef: Any, shown: str, path: str, sources: Sources) -> str | None:
    """``def Item(sku: str, qty: int = 0) -> Item: ...``; None for a class that is not
    built by calling it (an Enum, a Protocol)."""
    bases = base_names(classdef)
    if bases & NOT_CONSTRUCTED:
        return None
    inside = members(classdef)
    if built_from_fields(classdef):
        params = [_parameter(f) for f in fields(classdef)]
    elif init := next((m for m in inside if _named(m, "__init__")), None):
        params = parameters(init)[1:]
    elif new := next((m for m in inside if _named(m, "__new__")), None):
        params = parameters(new)[1:]
    elif not bases - {"object"}:
        params = []
    else:
        line, column = classdef.name.start_pos
        described = sources.signature(path, line - 1, column)
        if described is None:
            return None
        params = [described[1:-1]]
    name = classdef.name.value
    return f"def {shown}({', '.join(p for p in params if p)}) -> {name}: ..."


def _parameter(field: Any) -> str:
    """A field as a constructor parameter; a ``field(...)`` default is ``...``."""
    text = f"{field.name}: {typetext.flat(field.annotation.get_code(include_prefix=False))}"
    if field.default is None:
        return text
    default = typetext.flat(field.default.get_code(include_prefix=False))
    made = default.split("(")[0].rsplit(".", 1)[-1] in ("field", "Field")
    return text + (" = ..." if made else f" = {default}")


def _parso_scope(node: ast.AST, hole: Hole, path: str, sources: Sources) -> Any | None:
    """The parso funcdef or classdef of an enclosing ``ast`` scope (same lines)."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return None
    column = hole.column(node.lineno, node.col_offset)
    leaf = sources.leaf(path, node.lineno, column)
    while leaf is not None and leaf.type == "keyword" and leaf.value == "async":
        leaf = leaf.get_next_leaf()
    parent = leaf.parent if leaf is not None else None
    return parent if parent is not None and parent.type in ("funcdef", "classdef") else None


def _shown_decorators(function: Any) -> list[str]:
    return [
        d
        for d in decorators(function)
        if d.lstrip("@").split("(")[0].rsplit(".", 1)[-1] in _SHOWN_DECORATORS
    ]


def _returns(function: Any) -> str:
    annotation = function.annotation
    return typetext.flat(annotation.get_code(include_prefix=False)) if annotation else ""


def _named(node: Any, name: str) -> bool:
    return node.type == "funcdef" and node.name.value == name


def _place(node: Any, path: str) -> Place:
    line, column = node.start_pos
    return Place(path, line - 1, column)
