"""The hole at the cursor: incomplete code repaired just enough for ``ast`` to parse.

The editor's text is usually half a statement (``inv.restock(item, quantity=``).
A placeholder name goes where the cursor is, the brackets still open are closed
and, when that is not enough, the rest of the line or of the file is dropped or
an earlier broken line blanked, until ``ast.parse`` accepts it. Every line up to
the cursor keeps its text, so line numbers and the columns of everything before
the cursor are the editor's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from parso.python.tokenize import tokenize
from parso.utils import split_lines

PLACEHOLDER = "__steerlsp_hole__"
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_PARTIAL_WORD = re.compile(r"\w+$")
_STRING_START = re.compile(r"^[a-zA-Z]{0,3}['\"]")
_MAX_BLANKED = 3
# A line that starts a top-level definition: tokenizing can start there, not at line 1.
_STATEMENT_START = re.compile(r"^(?:(?:async[ \t]+)?def[ \t]|class[ \t]|@)", re.MULTILINE)


@dataclass(frozen=True)
class Hole:
    """The repaired module, the placeholder's expression and each node's parent."""

    text: str  # the repaired source
    tree: ast.Module
    node: ast.expr  # the whole expression the cursor completes (a name, a.b.c, ...)
    parents: dict[int, ast.AST]  # id(child) -> parent

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node ``node`` sits in, None for the module."""
        return self.parents.get(id(node))

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """The nodes around ``node``, innermost first."""
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def column(self, lineno: int, col_offset: int) -> int:
        """A code-point column from ``ast``'s 1-based line and UTF-8 byte offset."""
        lines = split_lines(self.text)
        if not 0 < lineno <= len(lines):
            return col_offset
        return len(lines[lineno - 1].encode("utf-8")[:col_offset].decode("utf-8", "replace"))

    def segment(self, node: ast.AST) -> str | None:
        """The source text of ``node`` in the repaired text."""
        return ast.get_source_segment(self.text, node)


def find_hole(source: str, line: int, column: int) -> Hole | None:
    """The hole at 0-based ``line`` and code-point ``column``, or None where the cursor
    is in a string or comment, or the text cannot be repaired."""
    lines = split_lines(source, keepends=True)
    if not 0 <= line < len(lines) or column < 0:
        return None
    current = lines[line].rstrip("\r\n")
    column = min(column, len(current))
    prefix = "".join(lines[:line]) + current[:column]
    closers = _open_brackets(prefix)
    if closers is None:
        return None
    prefix = _PARTIAL_WORD.sub("", prefix)  # the word being typed is the hole itself
    rest_of_line = current[column:]
    after = "".join(lines[line + 1 :])
    for text in _candidates(prefix, rest_of_line, after, closers):
        hole = _parse(text, prefix.count("\n") + 1)
        if hole is not None:
            return hole
    return None


def _candidates(prefix: str, rest_of_line: str, after: str, closers: str) -> Iterator[str]:
    base = prefix + PLACEHOLDER
    yield base + rest_of_line + "\n" + after
    yield base + closers + "\n" + after
    yield base + closers + "\n"
    yield base + closers + ": pass\n"
    if closers.startswith("}"):
        yield base + ": None" + closers + "\n"  # `{k: v, |`: a key, until its colon
    yield from _blanking_earlier_errors(prefix, closers)


def _blanking_earlier_errors(prefix: str, closers: str) -> Iterator[str]:
    """The hole's statement with up to a few broken lines before it replaced by ``pass``
    (and the brackets they left open forgotten)."""
    hole_line = prefix.count("\n") + 1
    text = prefix + PLACEHOLDER + closers + "\n"
    for _ in range(_MAX_BLANKED):
        try:
            ast.parse(text)
            return
        except SyntaxError as error:
            broken = error.lineno
        except (ValueError, MemoryError, RecursionError):
            return
        if broken is None or broken >= hole_line:
            return
        lines = prefix.split("\n")
        original = lines[broken - 1]
        lines[broken - 1] = original[: len(original) - len(original.lstrip())] + "pass"
        prefix = "\n".join(lines)
        text = prefix + PLACEHOLDER + (_open_brackets(prefix) or "") + "\n"
        yield text


def _open_brackets(prefix: str) -> str | None:
    """The closing brackets the prefix still needs, innermost first; None where the
    cursor is inside a string, an f-string or a comment."""
    starts = [m.start() for m in _STATEMENT_START.finditer(prefix)]
    prefix = prefix[starts[-1] :] if starts else prefix  # no bracket is open across a def
    stack: list[str] = []
    fstrings = 0
    last_line = prefix.count("\n") + 1
    token = None
    for token in tokenize(prefix, version_info=(3, 12)):
        kind = token.type.name
        if kind == "OP" and token.string in _CLOSERS:
            stack.append(_CLOSERS[token.string])
        elif kind == "OP" and token.string in stack:
            while stack.pop() != token.string:  # a mismatched closer: recover like a reader
                pass
        elif kind == "FSTRING_START":
            fstrings += 1
        elif kind == "FSTRING_END":
            fstrings -= 1
        elif kind == "ERRORTOKEN" and _unterminated(token.string, token.start_pos[0], last_line):
            return None
    if fstrings > 0:
        return None
    if token is not None and "#" in token.prefix.rsplit("\n", 1)[-1]:
        return None  # the end marker's prefix holds the cursor line's comment
    return "".join(reversed(stack))


def _unterminated(string: str, line: int, last_line: int) -> bool:
    """An unclosed string on the cursor's line, or an unclosed triple-quoted one."""
    if not _STRING_START.match(string):
        return False
    return line == last_line or string.lstrip("rbfuRBFU")[:3] in ('"""', "'''")


def _parse(text: str, line: int) -> Hole | None:
    """The hole in ``text``, whose placeholder is on 1-based ``line``; the parents are
    recorded only for the nodes spanning that line (a big module has many others)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    parents: dict[int, ast.AST] = {}
    found: ast.expr | None = None
    pending: list[ast.AST] = [tree]
    while pending:
        outer = pending.pop()
        for child in ast.iter_child_nodes(outer):
            start = getattr(child, "lineno", line)
            if not start <= line <= (getattr(child, "end_lineno", None) or start):
                continue
            parents[id(child)] = outer
            pending.append(child)
            if found is None and _is_placeholder(child):
                found = child  # type: ignore[assignment]
    if found is None:
        return None
    node: ast.expr = found
    while _continues(parents.get(id(node)), node):
        node = parents[id(node)]  # type: ignore[assignment]
    return Hole(text=text, tree=tree, node=node, parents=parents)


def _continues(parent: ast.AST | None, node: ast.expr) -> bool:
    """Whether ``parent`` is more of the expression the cursor is in: ``a.b``, ``a[b]``
    and ``a(...)`` where ``a`` is ``node``."""
    if isinstance(parent, ast.Attribute | ast.Subscript):
        return parent.value is node
    return isinstance(parent, ast.Call) and parent.func is node


def _is_placeholder(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return PLACEHOLDER in node.id
    return isinstance(node, ast.Attribute) and PLACEHOLDER in node.attr
