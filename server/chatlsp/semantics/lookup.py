"""The Jedi side of expectedType: parameters of called functions and declared
attributes of objects, read as written at their definitions."""

from __future__ import annotations

import ast
import re
from typing import Any

from parso.python import tree as python_tree
from parso.tree import BaseNode, Leaf

from steerlsp.models.semantics import typetext
from steerlsp.models.semantics.expected import Annotation
from steerlsp.server.chatlsp.semantics.classes import FIELD_BASES, base_names, fields
from steerlsp.server.chatlsp.semantics.sources import Sources

_MAX_BASES = 6  # classes visited looking for a declared attribute
_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
_BY_KEYWORD = ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")


class JediLookup:
    """``expected.Lookup`` over the open document's Jedi script."""

    def __init__(self, sources: Sources, script: Any) -> None:
        self._sources = sources
        self._script = script

    def parameter(
        self, line: int, column: int, index: int | None, keyword: str | None
    ) -> Annotation | None:
        """The bound parameter's annotation; None where overloads disagree."""
        field = self._field(line, column, index, keyword)
        if field is not None:
            return field
        try:
            signatures = self._script.get_signatures(line + 1, column)
        except Exception:
            return None
        found: list[Annotation] = []
        for signature in signatures:
            parameter = _bind(signature.params, index, keyword)
            annotation = self._parameter_annotation(parameter) if parameter else None
            if annotation is not None and not self._library_type_variable(annotation):
                found.append(annotation)
        if not found or len({a.text for a in found}) > 1:
            return None
        return found[0]

    def attribute(self, line: int, column: int, name: str) -> Annotation | None:
        """``name``'s declaration in the class of the object: ``name: T`` in the class body
        or ``self.name: T = ...`` in a method, looked up the bases too."""
        try:
            inferred = self._script.infer(line + 1, column)
        except Exception:
            return None
        pending = [n for n in inferred if n.type in ("instance", "class")]
        seen: set[tuple[str, int, int]] = set()
        while pending and len(seen) < _MAX_BASES:
            owner = pending.pop(0)
            if owner.module_path is None or owner.line is None:
                continue
            key = (str(owner.module_path), owner.line, owner.column)
            if key in seen:
                continue
            seen.add(key)
            classdef = _definition(self._sources.leaf(key[0], owner.line, owner.column))
            if classdef is None or classdef.type != "classdef":
                continue
            declared = _declared(classdef, name)
            if declared is not None:
                return annotation_of(declared, key[0])
            pending.extend(self._bases(classdef, key[0]))
        return None

    def _field(
        self, line: int, column: int, index: int | None, keyword: str | None
    ) -> Annotation | None:
        """The field an argument of ``Row(...)`` sets, for the field-built classes whose
        constructor Jedi describes as ``**kwargs: Any`` (NamedTuple, TypedDict, pydantic).
        Positions count for a NamedTuple only; the others take keywords."""
        try:
            callees = self._script.goto(line + 1, max(column - 1, 0), follow_imports=True)
        except Exception:
            return None
        for callee in callees:
            if callee.type != "class" or callee.module_path is None:
                continue
            path = str(callee.module_path)
            classdef = _definition(self._sources.leaf(path, callee.line, callee.column))
            if classdef is None or classdef.type != "classdef":
                continue
            bases = base_names(classdef)
            if not bases & FIELD_BASES:
                continue
            declared = fields(classdef)
            if keyword is not None:
                declared = [f for f in declared if f.name == keyword]
            elif index is not None and "NamedTuple" in bases and index < len(declared):
                declared = declared[index : index + 1]
            else:
                declared = []
            if declared:
                return annotation_of(declared[0].annotation, path)
        return None

    def alias(self, annotation: Annotation) -> Annotation | None:
        """The right-hand side of ``Name = ...`` or ``Name: TypeAlias = ...``."""
        parsed = typetext.parse(annotation.text)
        dotted = typetext.dotted(parsed) if parsed is not None else None
        if dotted is None or not annotation.path:
            return None
        names = []
        if annotation.exact and annotation.raw == annotation.text:
            end = annotation.column + len(annotation.raw)
            names = self._sources.goto(annotation.path, annotation.line, end - 1)
        if not names:
            names = self._sources.goto_name(annotation.path, dotted)
        for name in names:
            if name.type != "statement" or name.module_path is None:
                continue
            statement = _definition(self._sources.leaf(name.module_path, name.line, name.column))
            value = _assigned_value(statement)
            if value is not None:
                return annotation_of(value, name.module_path)
        return None

    def _bases(self, classdef: BaseNode, path: str) -> list[Any]:
        found: list[Any] = []
        for leaf in _base_names(classdef):
            line, column = leaf.start_pos
            found.extend(n for n in self._sources.goto(path, line - 1, column) if n.type == "class")
        return found

    def _library_type_variable(self, annotation: Annotation) -> bool:
        """``_T`` of ``list.append(self, object: _T)``: a library's type variable says
        nothing without the inference ChatLSP does not do."""
        if not annotation.text.isidentifier() or not annotation.path:
            return False
        if not self._sources.is_library(annotation.path):
            return False
        text = self._sources.text(annotation.path) or ""
        pattern = rf"^{re.escape(annotation.text)}\s*=\s*(\w+\.)?TypeVar\("
        return re.search(pattern, text, re.MULTILINE) is not None

    def _parameter_annotation(self, parameter: Any) -> Annotation | None:
        path = str(parameter.module_path) if parameter.module_path else ""
        if path and parameter.line is not None:
            leaf = self._sources.leaf(path, parameter.line, parameter.column)
            node = leaf.parent if leaf is not None else None
            if node is not None and node.type == "tfpdef":
                node = node.parent
            if isinstance(node, python_tree.Param):
                written = node.annotation
                return annotation_of(written, path) if written is not None else None
            if node is not None and node.type == "expr_stmt":  # a dataclass field
                return _field_annotation(node, path)
        return _from_description(parameter.to_string())


def annotation_of(node: Any, path: str) -> Annotation | None:
    """An ``Annotation`` for a parso annotation node of the file at ``path``."""
    raw = node.get_code(include_prefix=False)
    text = typetext.unquoted(typetext.flat(raw))
    if not text:
        return None
    line, column = node.start_pos
    return Annotation(text, raw, path, line - 1, column)


def _assigned_value(statement: Any) -> Any | None:
    """``rhs`` of ``X = rhs`` or ``X: T = rhs``."""
    if statement is None or statement.type != "expr_stmt":
        return None
    children = statement.children
    if len(children) == 3 and children[1] == "=":
        return children[2]
    if len(children) == 2 and children[1].type == "annassign":
        declared = children[1].children
        return declared[3] if len(declared) == 4 else None
    return None


def _bind(parameters: list[Any], index: int | None, keyword: str | None) -> Any | None:
    """The parameter an argument binds to, by position or by keyword."""
    kinds = [(p, p.kind.name) for p in parameters]
    if keyword is not None:
        named = [p for p, kind in kinds if kind in _BY_KEYWORD and p.name == keyword]
        rest = [p for p, kind in kinds if kind == "VAR_KEYWORD"]
        return (named or rest or [None])[0]
    positional = [p for p, kind in kinds if kind in _POSITIONAL]
    if index is not None and index < len(positional):
        return positional[index]
    rest = [p for p, kind in kinds if kind == "VAR_POSITIONAL"]
    return rest[0] if rest else None


def _declared(classdef: BaseNode, name: str) -> Any | None:
    """The annotation node declaring attribute ``name`` in a class."""
    suite = classdef.children[-1]
    statements = _statements(suite)
    for statement in statements:
        annotation = _annotated(statement, name, receiver=None)
        if annotation is not None:
            return annotation
    for function in (s for s in statements if s.type in ("funcdef", "async_funcdef")):
        params = function.get_params()
        receiver = params[0].name.value if params else None
        for node in _walk(function.children[-1]):
            if node.type == "expr_stmt":
                annotation = _annotated(node, name, receiver=receiver)
                if annotation is not None:
                    return annotation
    return None


def _annotated(statement: Any, name: str, receiver: str | None) -> Any | None:
    """The annotation of ``name: T`` (or ``receiver.name: T``) if that is ``statement``."""
    if statement.type != "expr_stmt" or len(statement.children) < 2:
        return None
    target, second = statement.children[0], statement.children[1]
    if second.type != "annassign":
        return None
    written = target.get_code(include_prefix=False).replace(" ", "")
    wanted = name if receiver is None else f"{receiver}.{name}"
    return second.children[1] if written == wanted else None


def _field_annotation(statement: Any, path: str) -> Annotation | None:
    if len(statement.children) > 1 and statement.children[1].type == "annassign":
        return annotation_of(statement.children[1].children[1], path)
    return None


def _statements(suite: Any) -> list[Any]:
    """A suite's statements, decorated functions and simple statements unwrapped."""
    found: list[Any] = []
    for child in getattr(suite, "children", []):
        if child.type == "simple_stmt":
            found.extend(c for c in child.children if c.type != "newline")
        elif child.type == "decorated" or child.type == "async_stmt":
            found.append(child.children[-1])
        else:
            found.append(child)
    return found


def _walk(node: Any) -> list[Any]:
    found: list[Any] = []
    pending = [node]
    while pending:
        current = pending.pop()
        found.append(current)
        if current.type not in ("funcdef", "classdef", "lambdef") or current is node:
            pending.extend(reversed(getattr(current, "children", [])))
    return found


def _definition(leaf: Any | None) -> Any | None:
    if leaf is None or leaf.type != "name":
        return None
    return leaf.get_definition()


def _base_names(classdef: BaseNode) -> list[Leaf]:
    """The last name of each base class expression (``b`` of ``a.b``), no keywords."""
    children = classdef.children
    if "(" not in [getattr(c, "value", None) for c in children]:
        return []
    start = [getattr(c, "value", None) for c in children].index("(")
    bases = children[start + 1]
    items = bases.children if bases.type == "arglist" else [bases]
    found: list[Leaf] = []
    for item in items:
        if item.type == "argument" or getattr(item, "value", None) in (",", ")"):
            continue
        parts = list(getattr(item, "children", [item]))
        while len(parts) > 1 and parts[-1].get_first_leaf().value == "[":
            parts.pop()  # Generic[T]: the generic's name
        leaf = parts[-1].get_last_leaf()
        if leaf.type == "name":
            found.append(leaf)
    return found


def _from_description(text: str) -> Annotation | None:
    """A parameter described only as text (compiled code): its annotation, unplaced."""
    try:
        tree = ast.parse(f"def _({text}): pass")
    except (SyntaxError, ValueError):
        return None
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    if not every or every[0].annotation is None:
        return None
    raw = ast.unparse(every[0].annotation)
    return Annotation(typetext.unquoted(raw), raw, "", 0, 0, exact=False)
