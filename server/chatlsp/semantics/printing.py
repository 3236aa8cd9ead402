"""Definitions printed as Python from their parso trees: classes with their fields,
decorators and method headers but no bodies, aliases as written, function headers
on one line."""

from __future__ import annotations

import ast
from typing import Any

from steerlsp.models.semantics.typetext import flat

INDENT = "    "
_FUNCTIONS = ("funcdef", "async_funcdef", "async_stmt")
_CLASS_CAP = 2_500  # characters of one class; past it the members are elided


def definition(node: Any, cap: int = _CLASS_CAP) -> str | None:
    """A class or an assignment (an alias) as Python; None for anything else."""
    if node.type == "classdef":
        return class_code(node, "", cap)
    if node.type == "expr_stmt":
        return _reindented(_statement_code(node), node.start_pos[1], "")
    return None


def class_code(classdef: Any, indent: str, cap: int) -> str:
    """The class with its decorators, header, docstring's first line, fields and nested
    classes as written, methods as headers ending in ``...``; members past ``cap``
    characters are elided."""
    lines = [indent + d for d in decorators(classdef)]
    lines.append(indent + flat(_code_before_colon(classdef)) + ":")
    inner = indent + INDENT
    members = 0
    size = sum(len(line) + 1 for line in lines)
    for member in _members(classdef.children[-1], inner, cap):
        if size + len(member) > cap and members:
            lines.append(inner + "...")
            break
        lines.append(member)
        size += len(member) + 1
        members += 1
    if not members:
        lines.append(inner + "...")
    return "\n".join(lines)


def function_header(
    function: Any, name: str | None = None, *, drop_first: bool = False, returns: str | None = None
) -> str:
    """``def name(params) -> R: ...`` on one line; ``drop_first`` leaves out ``self``."""
    function = _function_node(function)
    asynchronous = function.parent is not None and function.parent.type in (
        "async_stmt",
        "async_funcdef",
    )
    written = function.name.value
    type_params = "".join(
        flat(c.get_code(include_prefix=False)) for c in function.children if c.type == "type_params"
    )
    items = parameters(function)
    if drop_first and items:
        items = items[1:]
    annotation = function.annotation
    result = returns or (flat(annotation.get_code(include_prefix=False)) if annotation else None)
    arrow = f" -> {result}" if result else ""
    prefix = "async def" if asynchronous else "def"
    return f"{prefix} {name or written}{type_params}({', '.join(items)}){arrow}: ..."


def parameters(function: Any) -> list[str]:
    """Each parameter (and ``*`` or ``/`` marker) as written, on one line."""
    node = next(c for c in function.children if c.type == "parameters")
    items: list[str] = []
    for child in node.children[1:-1]:
        text = child.get_code(include_prefix=False).strip()
        if text == ",":
            continue
        text = flat(text.removesuffix(",") if child.type == "param" else text)
        if text:
            items.append(text)
    return items


def decorators(node: Any) -> list[str]:
    """The decorator lines of a class or function, flattened, ``@`` included."""
    parent = node.parent
    if parent is not None and parent.type == "async_funcdef":
        parent = parent.parent
    if parent is None or parent.type != "decorated":
        return []
    first = parent.children[0]
    found = first.children if first.type == "decorators" else [first]
    return [flat(d.get_code(include_prefix=False)) for d in found]


def docstring_line(suite: Any) -> str | None:
    """The first line of a suite's docstring, quoted again, or None."""
    for child in getattr(suite, "children", []):
        if child.type == "newline":
            continue
        if child.type != "simple_stmt" or child.children[0].type != "string":
            return None
        try:
            value = ast.literal_eval(child.children[0].get_code(include_prefix=False))
        except (ValueError, SyntaxError):
            return None
        if not isinstance(value, str):
            return None
        first = next((line.strip() for line in value.splitlines() if line.strip()), "")
        return '"""' + first.replace('"""', "'''") + '"""' if first else None
    return None


def _members(suite: Any, indent: str, cap: int) -> list[str]:
    found: list[str] = []
    doc = docstring_line(suite)
    if doc:
        found.append(indent + doc)
    for child in getattr(suite, "children", []):
        if child.type == "simple_stmt":
            found.extend(
                _reindented(_statement_code(part), part.start_pos[1], indent)
                for part in child.children
                if part.type == "expr_stmt"
            )
        elif child.type in ("funcdef", "async_stmt"):
            found.append(indent + function_header(child))
        elif child.type == "decorated":
            target = child.children[-1]
            if target.type == "classdef":
                found.append(class_code(target, indent, cap // 2))
            elif target.type in _FUNCTIONS:
                lines = [*decorators(_function_node(target)), function_header(target)]
                found.append("\n".join(indent + line for line in lines))
        elif child.type == "classdef":
            found.append(class_code(child, indent, cap // 2))
    return found


def _function_node(node: Any) -> Any:
    """The funcdef inside ``async def`` and decorated wrappers."""
    while node.type != "funcdef":
        node = node.children[-1]
    return node


def _statement_code(statement: Any) -> str:
    """A statement as written with its trailing comment, without the newline."""
    parent = statement.parent
    if parent is not None and parent.type == "simple_stmt" and len(parent.children) == 2:
        return parent.get_code(include_prefix=False).rstrip("\r\n")
    return statement.get_code(include_prefix=False).rstrip("\r\n")


def _code_before_colon(node: Any) -> str:
    """``class A(B)``: a class's header without its ``:`` and body."""
    parts: list[str] = []
    for child in node.children:
        if child.type == "operator" and child.value == ":":
            break
        parts.append(child.get_code(include_prefix=bool(parts)))
    return "".join(parts)


def _reindented(code: str, column: int, indent: str) -> str:
    """``code`` that started at ``column`` moved to start at ``indent``, its continuation
    lines shifted with it."""
    lines = code.split("\n")
    shift = column - len(indent)
    moved = [indent + lines[0]]
    for line in lines[1:]:
        if shift > 0 and line[:shift].strip() == "":
            moved.append(line[shift:])
        elif shift < 0:
            moved.append(" " * -shift + line)
        else:
            moved.append(line)
    return "\n".join(moved)
