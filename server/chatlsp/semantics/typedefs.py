"""relevantTypes: the definitions of the types an expected type names, followed
through fields, bases and aliases breadth-first, bounded in count and size."""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from parso.python import tree as python_tree

from steerlsp.models.semantics import typetext
from steerlsp.models.semantics.expected import Annotation
from steerlsp.server.chatlsp import Place, TypeDefinition
from steerlsp.server.chatlsp.semantics.printing import definition
from steerlsp.server.chatlsp.semantics.sources import Sources

MAX_DEFINITIONS = 12
MAX_CHARACTERS = 6_000
_TYPE_STATEMENT = r"^type[ \t]+{name}\b[^\n]*(?:\n[ \t]+[^\n]*)*"


@dataclass(frozen=True)
class Mention:
    """A type name written somewhere: resolved where it is written."""

    dotted: str
    path: str
    line: int  # 0-based, of the name's last part
    column: int
    exact: bool  # False: inside a string, resolved by name at the file's top level
    base: bool = False  # a base class: followed only into the workspace, not libraries


def relevant_types(
    start: Annotation,
    sources: Sources,
    limit: int = MAX_DEFINITIONS,
    size: int = MAX_CHARACTERS,
) -> list[TypeDefinition]:
    """The definitions reachable from ``start``: its own names first, then what their
    fields, bases and aliases name. Workspace definitions are followed; library ones
    are printed but not followed; builtins, typing and the standard library are
    neither."""
    pending = deque(mentions(start))
    seen: set[tuple[str, int, int]] = set()
    found: list[TypeDefinition] = []
    used = 0
    while pending and len(found) < limit:
        mention = pending.popleft()
        for name in _resolve(mention, sources):
            key = (str(name.module_path), name.line, name.column)
            if key in seen:
                continue
            seen.add(key)
            if mention.base and sources.is_library(str(name.module_path)):
                continue  # BaseModel, Generic, ...: the user's own class says what matters
            printed = _printed(name, sources)
            if printed is None:
                continue
            code, node = printed
            if used + len(code) > size:
                continue
            used += len(code)
            path = str(name.module_path)
            found.append(TypeDefinition(name.name, code, Place(path, name.line - 1, name.column)))
            if node is not None and not sources.is_library(path):
                pending.extend(_inner_mentions(node, path))
            if len(found) >= limit:
                break
    return found


def mentions(annotation: Annotation) -> list[Mention]:
    """The names an annotation mentions, with where each is written."""
    node = typetext.parse(annotation.raw)
    exact = annotation.exact
    raw = annotation.raw
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        written = node.value
        node, exact, raw = typetext.parse(written), False, written
    if node is None:
        return []
    return _from_expression(node, raw, annotation.path, annotation.line, annotation.column, exact)


def _from_expression(
    node: ast.expr, raw: str, path: str, line: int, column: int, exact: bool, base: bool = False
) -> list[Mention]:
    found: list[Mention] = []
    lines = raw.split("\n")
    for name, quoted in _type_names(node):
        dotted = typetext.dotted(name)
        if dotted is None or dotted.rsplit(".", 1)[-1] in typetext.BUILTIN_NAMES:
            continue
        if quoted or not exact:
            found.append(Mention(dotted, path, line, column, False, base))
            continue
        last_line = (name.end_lineno or 1) - 1
        last_part = dotted.rsplit(".", 1)[-1]
        start = _chars(lines, last_line, name.end_col_offset or 0) - len(last_part)
        absolute = start + (column if last_line == 0 else 0)
        found.append(Mention(dotted, path, line + last_line, absolute, True, base))
    return found


def _type_names(node: ast.expr) -> list[tuple[ast.expr, bool]]:
    """Type names in an annotation, those in forward-reference strings too (True)."""
    found: list[tuple[ast.expr, bool]] = [(name, False) for name in typetext.names(node)]
    for constant in ast.walk(node):
        if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
            inner = typetext.parse(constant.value)
            if inner is not None and not _inside_literal(node, constant):
                found.extend((name, True) for name in typetext.names(inner))
    return found


def _inside_literal(root: ast.expr, target: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Subscript)
        and typetext.head(node) in ("Literal", "Annotated")
        and any(sub is target for sub in ast.walk(node.slice))
        for node in ast.walk(root)
    )


def _resolve(mention: Mention, sources: Sources) -> list[Any]:
    names: list[Any] = []
    if mention.exact:
        names = sources.goto(mention.path, mention.line, mention.column)
    if not names:
        names = sources.goto_name(mention.path, mention.dotted)
    kept = [n for n in names if n.type in ("class", "statement") and not sources.is_known(n)]
    if not kept and not names:
        kept = _type_statement(mention, sources)
    return kept


def _printed(name: Any, sources: Sources) -> tuple[str, Any] | None:
    if isinstance(name, _TypeStatement):
        return name.code, None
    leaf = sources.leaf(str(name.module_path), name.line, name.column)
    if not isinstance(leaf, python_tree.Name):
        return None
    node = leaf.get_definition()
    if node is None or node.type not in ("classdef", "expr_stmt"):
        return None
    if node.type == "expr_stmt" and node.parent.parent.type not in ("file_input", "suite"):
        return None
    code = definition(node)
    if code and node.type == "expr_stmt" and _after_type_keyword(node):
        code = "type " + code
    return (code, node) if code else None


def _after_type_keyword(statement: Any) -> bool:
    """``type X = ...`` (3.12), which parso reads as a stray ``type`` and ``X = ...``."""
    previous = statement.get_first_leaf().get_previous_leaf()
    return (
        previous is not None
        and previous.value == "type"
        and previous.start_pos[0] == statement.start_pos[0]
        and previous.parent is not None
        and previous.parent.type == "error_node"
    )


def _inner_mentions(node: Any, path: str) -> list[Mention]:
    """What a definition's fields, bases or aliased expression name."""
    found: list[Mention] = []
    for part, base in _type_parts(node):
        raw = part.get_code(include_prefix=False)
        parsed = typetext.parse(raw)
        if parsed is None:
            continue
        line, column = part.start_pos
        found.extend(_from_expression(parsed, raw, path, line - 1, column, True, base))
    return found


def _type_parts(node: Any) -> list[tuple[Any, bool]]:
    """The annotation and value nodes of an alias; the field annotations and base
    classes of a class (True: a base)."""
    if node.type == "expr_stmt":
        values = [c for c in node.children[1:] if c.type not in ("operator", "annassign")]
        for declared in (a for a in node.children if a.type == "annassign"):
            values.extend(c for c in declared.children[1:] if c != "=")
        return [(value, False) for value in values]
    parts: list[tuple[Any, bool]] = []
    suite = node.children[-1]
    for child in getattr(suite, "children", []):
        if child.type != "simple_stmt":
            continue
        for statement in child.children:
            if statement.type == "expr_stmt" and statement.children[1].type == "annassign":
                parts.append((statement.children[1].children[1], False))
    opened = [getattr(c, "value", None) for c in node.children]
    if "(" in opened:
        bases = node.children[opened.index("(") + 1]
        if bases.type != "operator":
            parts.extend(
                (b, True)
                for b in (bases.children if bases.type == "arglist" else [bases])
                if b.type != "operator" and b.type != "argument"
            )
    return parts


@dataclass(frozen=True)
class _TypeStatement:
    """A 3.12 ``type X = ...`` statement, which parso and Jedi do not read."""

    name: str
    code: str
    module_path: str
    line: int
    column: int = 0
    type: str = "class"


def _type_statement(mention: Mention, sources: Sources) -> list[Any]:
    text = sources.text(mention.path)
    name = mention.dotted.rsplit(".", 1)[-1]
    if text is None or "type" not in text:
        return []
    match = re.search(_TYPE_STATEMENT.format(name=re.escape(name)), text, re.MULTILINE)
    if match is None:
        return []
    line = text.count("\n", 0, match.start()) + 1
    return [_TypeStatement(name, match.group(0).rstrip(), mention.path, line)]


def _chars(lines: list[str], index: int, byte_offset: int) -> int:
    if index >= len(lines):
        return byte_offset
    return len(lines[index].encode("utf-8")[:byte_offset].decode("utf-8", "replace"))
