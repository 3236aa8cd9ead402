"""Deprecated parameters of one function, read statically from its source.

Library APIs change at their keywords: a parameter renamed (scikit-learn's
``sparse`` to ``sparse_output``), a flag replaced. The definition itself is
not deprecated then (``static.py`` leaves argument-level evidence out on
purpose); its parameters are. Nothing is imported or executed: the file is
parsed with ``ast``. What counts, for the function at a definition line (a
class there: its ``__init__``):

1. ``decorator``: a decorator call spelt ``*deprecat*`` that names the old
   and new argument (pandas' ``@deprecate_kwarg(old_arg_name="cols",
   new_arg_name="columns")``, or two strings in that order).
2. ``warning``: an ``if`` in the body whose test asks whether a parameter was
   passed (``if cols:``, ``if cols is not None:``, ``if cols != "deprecated":``)
   and that issues a warning saying "deprecated", "renamed", "removed" or "will
   be removed" (any ``*warn*`` call). Not another test: ``if protocol is
   None:`` warns about leaving it out, an ``isinstance`` about a kind of value.
3. ``docstring``: a parameter's entry in a numpydoc or Google-style section
   that says "deprecated".

The replacement is the parameter a notice names ("use ``columns`` instead",
"renamed to columns"), when the function has a parameter of that name.
Lines are 0-based, as in LSP.
"""

from __future__ import annotations

import ast
import re

from steerlsp.models.deprecation.evidence import Deprecation, Source
from steerlsp.models.deprecation.syntax import last_name, literal_text
from steerlsp.models.deprecation.text import replacement_in

_SAYS_DEPRECATED = re.compile(r"deprecat|renamed|will be removed|is removed", re.IGNORECASE)
_OLD = ("old_arg_name", "old_name", "old", "deprecated")
_NEW = ("new_arg_name", "new_name", "new", "replacement")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def deprecated_parameters(source: str | bytes, line: int) -> dict[str, Deprecation]:
    """The deprecated parameters of the function defined at 0-based ``line`` (a
    decorator line of it matches too; a class there: its ``__init__``), by name.
    Empty when the source does not parse or no function is there. Only that
    definition's lines are parsed where they can be cut out (pandas' ``frame.py``
    is 12,000 lines; a function in it, a few hundred)."""
    function = None
    piece = _definition_lines(source, line)
    if piece is not None:
        function = _function_at(_parsed(piece[0]), piece[1])
    if function is None:
        function = _function_at(_parsed(source), line)
    if function is None:
        return {}
    arguments = function.args
    names = [
        a.arg
        for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        if a.arg not in ("self", "cls")
    ]
    found: dict[str, Deprecation] = {}
    try:
        for old, deprecation in (
            *_from_decorators(function),
            *_from_warnings(function, names),
            *_from_docstring(function, names),
        ):
            found.setdefault(old, deprecation)
    except RecursionError:
        return {}
    return {
        name: _with_replacement(deprecation, name, names) for name, deprecation in found.items()
    }


def _parsed(source: str | bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


_HEADER = re.compile(r"(?P<indent>[ \t]*)(?:async[ \t]+)?(?P<kind>def|class)[ \t]+(?P<name>\w+)")


def _definition_lines(source: str | bytes, line: int) -> tuple[str, int] | None:
    """The lines of the definition at ``line`` (its decorators, then its block; a
    class's ``__init__`` instead of the class), dedented, and its line among them;
    None where they cannot be told apart from the rest."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError:
            return None
    lines = source.splitlines()
    if not 0 <= line < len(lines):
        return None
    header = line
    while header < len(lines) and lines[header].lstrip().startswith("@"):
        header += 1  # the server named a decorator line
    found = _HEADER.match(lines[header]) if header < len(lines) else None
    if found is None:
        return None
    end = _block_end(lines, header, len(found.group("indent")))
    if found.group("kind") == "class":
        inits = [
            i
            for i in range(header + 1, end)
            if (m := _HEADER.match(lines[i])) and m.group("name") == "__init__"
        ]
        if len(inits) != 1:
            return None
        header = inits[0]
        indent = len(_HEADER.match(lines[header]).group("indent"))  # type: ignore[union-attr]
        end = _block_end(lines, header, indent)
    indent = len(lines[header]) - len(lines[header].lstrip())
    start = header
    while start > 0 and lines[start - 1].lstrip().startswith(("@", ")")):
        start -= 1  # decorators (a multi-line one's close and its opening line)
    piece = [text[indent:] if text[:indent].strip() == "" else text for text in lines[start:end]]
    return "\n".join(piece) + "\n", header - start


def _block_end(lines: list[str], header: int, indent: int) -> int:
    """The first line after ``header``'s block: a line of code no deeper than it."""
    for index in range(header + 1, len(lines)):
        text = lines[index]
        code = text.lstrip()
        if code and not code.startswith(("#", ")")) and len(text) - len(code) <= indent:
            return index
    return len(lines)


def _function_at(
    tree: ast.Module | None, line: int
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            continue
        first = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
        if not first <= line <= node.lineno - 1:
            continue
        if isinstance(node, ast.ClassDef):
            return next(
                (n for n in node.body if isinstance(n, _FUNCTIONS) and n.name == "__init__"),
                None,
            )
        return node
    return None


def _from_decorators(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[str, Deprecation]]:
    found = []
    for decorator in function.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        name = last_name(decorator.func)
        if "deprecat" not in name.lower():
            continue
        old = _text(decorator, 0, _OLD)
        new = _text(decorator, 1, _NEW)
        if old and old.isidentifier():
            reason = f"@{name}: {old} -> {new}" if new else f"@{name}: {old}"
            found.append((old, _deprecation(reason, new, "decorator")))
    return found


def _text(call: ast.Call, index: int, keywords: tuple[str, ...]) -> str | None:
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return literal_text(keyword.value)
    if len(call.args) > index:
        return literal_text(call.args[index])
    return None


def _from_warnings(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: list[str]
) -> list[tuple[str, Deprecation]]:
    found = []
    for node in _body_nodes(function):
        if not isinstance(node, ast.If):
            continue
        given = _given(node.test)
        if given not in names:
            continue
        message = _warning_in(node.body)
        if message is not None:
            found.append((given, _deprecation(message, None, "warning")))
    return found


def _given(test: ast.expr) -> str | None:
    """The parameter a test asks was passed: ``if x:``, ``if x is not None:``, ``if x
    != "deprecated":``, ``if x is not lib.no_default:``; None for any other test (an
    ``isinstance`` is about a kind of value, ``if x is None`` about leaving it out)."""
    if isinstance(test, ast.Name):
        return test.id
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.IsNot, ast.NotEq))
        and isinstance(test.comparators[0], (ast.Constant, ast.Name, ast.Attribute))
    ):
        return test.left.id
    return None


def _body_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The function's statements and what they hold, not nested definitions'."""
    nodes: list[ast.AST] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        nodes.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return nodes


def _warning_in(body: list[ast.stmt]) -> str | None:
    """The message of a warning ``body`` issues that says the argument is going."""
    for statement in body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call) or "warn" not in last_name(node.func).lower():
                continue
            for argument in (*node.args, *(k.value for k in node.keywords)):
                text = literal_text(argument)
                if text and _SAYS_DEPRECATED.search(text):
                    return text
    return None


# ``name : type`` (numpydoc) or ``name (type): text`` / ``name: text`` (Google style).
_ENTRY = re.compile(r"^(?P<indent>\s*)\**(?P<name>[A-Za-z_]\w*)\**\s*(?:\([^)]*\))?\s*:")


def _from_docstring(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: list[str]
) -> list[tuple[str, Deprecation]]:
    docstring = ast.get_docstring(function, clean=True) or ""
    found = []
    lines = docstring.splitlines()
    for index, text in enumerate(lines):
        entry = _ENTRY.match(text)
        if entry is None or entry.group("name") not in names:
            continue
        indent = len(entry.group("indent"))
        block = [text[entry.end() :]]
        for following in lines[index + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            block.append(following.strip())
        said = " ".join(part for part in block if part)
        if re.search(r"deprecat", said, re.IGNORECASE):
            found.append((entry.group("name"), _deprecation(said, None, "docstring")))
    return found


def _deprecation(reason: str, replacement: str | None, source: Source) -> Deprecation:
    return Deprecation(" ".join(reason.split())[:300], replacement, source)


def _with_replacement(deprecation: Deprecation, name: str, names: list[str]) -> Deprecation:
    """The replacement a notice names, kept only where it is another parameter."""
    replacement = deprecation.replacement or replacement_in(deprecation.reason, avoid=name)
    if replacement not in names or replacement == name:
        replacement = None
    return Deprecation(deprecation.reason, replacement, deprecation.source)
