"""Names the model reads that nothing defines: found at each statement's end, undone.

After attribute steering, the static errors left in the embedded model's
completions are almost all undefined names (pylint E0602): ``form.get(key)``
where no ``key`` exists, ``len(obj)`` inside a function whose parameter is
``values``. A name is only known to be read, not bound, once its statement is
whole: ``[obj.name for obj in items]`` binds ``obj`` after reading it, ``f(key=1)``
names a parameter. So the check runs where a statement ends (a newline at
bracket depth 0), on the statement parsed with ``ast``, against the names in
scope at the cursor (asked of the analysis once per completion), the builtins
and every name the generated text has bound so far; the decode loop then
rewinds to the first undefined name and writes another (``models/steering/stages/names.py``).

Pure functions and one small stateful class (:class:`NameCheck`), no I/O.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from dataclasses import dataclass, field

# Readable everywhere without a definition in the file.
BUILTIN_NAMES = frozenset(dir(builtins)) | frozenset(
    {"__name__", "__file__", "__doc__", "__spec__", "__package__", "__loader__", "__path__"}
    | {"__builtins__", "__debug__", "__annotations__", "__dict__", "__class__", "__qualname__"}
    | {"__module__", "reveal_type"}
)
# Statement headers that need a body to parse, and what stands in for their context.
_BLOCK_END = re.compile(r":\s*(#.*)?$")
_NEEDS_TRY = re.compile(r"^(except\b|except\*)")
_SKIP = re.compile(r"^(else|try|finally|case|match)\b")


@dataclass(frozen=True)
class Undefined:
    """A name read in a statement that no scope, builtin or earlier binding defines."""

    name: str
    offset: int  # code points from the start of the statement text given


@dataclass(frozen=True)
class Parsed:
    """A statement parsed, and how the parsed source's positions map back to it."""

    tree: ast.Module
    lines_added: int  # lines put in front (a stand-in ``try:`` for an ``except``)
    first_column: int  # what to add to a column on the statement's first line


_TRY = "try:\n    pass\n"


def parse_statement(statement: str) -> Parsed | None:
    """``statement`` (one logical line, maybe over several physical lines, indented as it
    stood) parsed; block headers get a ``pass`` body. None when it does not parse."""
    first = statement.lstrip()
    if not first or first.startswith("#") or _SKIP.match(first):
        return None
    column = len(statement) - len(first)
    source, lines_added = first, 0
    if first.startswith(("elif ", "elif(")):
        source, column = first[2:], column + 2  # "elif x:" parses as "if x:"
    elif _NEEDS_TRY.match(first):
        source, lines_added = _TRY + first, _TRY.count("\n")
    if _BLOCK_END.search(source.rstrip().split("\n")[-1]):
        source += "\n    pass"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return Parsed(tree, lines_added, column)


def undefined_reads(statement: str, known: frozenset[str] | set[str]) -> list[Undefined]:
    """Names ``statement`` reads that are neither in ``known``, builtins, nor bound by the
    statement itself (comprehension targets, lambda parameters, ``:=``), first first."""
    parsed = parse_statement(statement)
    if parsed is None:
        return []
    inside = bound_names(parsed.tree, local=True)
    lines = statement.split("\n")
    found = []
    for node in ast.walk(parsed.tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        name = node.id
        if name in known or name in BUILTIN_NAMES or name in inside or keyword.iskeyword(name):
            continue
        offset = _offset(lines, parsed, node.lineno, node.col_offset)
        if offset is not None:
            found.append(Undefined(name, offset))
    return sorted(found, key=lambda u: u.offset)


def bound_names(tree: ast.AST, *, local: bool = False) -> set[str]:
    """The names ``tree`` binds: assignment, ``for``, ``with``/``except`` targets, imports,
    ``def``/``class`` and their parameters, ``global``. With ``local``, also what binds
    only inside the statement: comprehension targets, lambda parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            if not isinstance(node, ast.ClassDef):
                names.update(_parameters(node.args))
        elif isinstance(node, ast.Lambda) and local:
            names.update(_parameters(node.args))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
    if not local:  # comprehension targets do not leak out of their comprehension
        for node in ast.walk(tree):
            if isinstance(node, ast.comprehension):
                names -= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return names


def _parameters(arguments: ast.arguments) -> set[str]:
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.arg for a in every}


def _offset(lines: list[str], parsed: Parsed, lineno: int, col: int) -> int | None:
    """ast's (1-based line, UTF-8 byte column) in the parsed source -> a statement offset."""
    index = lineno - 1 - parsed.lines_added
    if not 0 <= index < len(lines):
        return None  # in the stand-in ``try`` or ``pass``
    line = lines[index]
    skip = parsed.first_column if index == 0 else 0
    column = skip + len(line[skip:].encode("utf-8")[:col].decode("utf-8", "replace"))
    return sum(len(text) + 1 for text in lines[:index]) + column


@dataclass
class NameCheck:
    """Per completion: what is known to be defined, and where the current statement
    began in the text (the window's code, then the generated text)."""

    known: set[str] = field(default_factory=set)
    statement_start: int | None = None  # None: the statement began before the window

    def check(self, text: str, end: int, generated_from: int) -> Undefined | None:
        """The first name that the statement from :attr:`statement_start` to ``end`` (its
        newline) reads and nothing defines, at or after ``generated_from``; ``offset``
        into ``text``. None when there is none, or the statement cannot be read."""
        start = self.statement_start
        if start is None or end <= start or not text[start:end].strip():
            return None
        for found in undefined_reads(text[start:end], self.known):
            if start + found.offset >= generated_from:
                return Undefined(found.name, start + found.offset)
        return None

    def advance(self, text: str, end: int) -> None:
        """The statement ending at ``end`` stands: learn what it binds; the next begins."""
        start, self.statement_start = self.statement_start, end + 1
        if start is not None and end > start:
            parsed = parse_statement(text[start:end])
            if parsed is not None:
                self.known.update(bound_names(parsed.tree))
