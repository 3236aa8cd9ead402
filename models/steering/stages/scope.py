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
# What ``ast.parse`` raises for text it cannot read on the decode thread. SystemError:
# CPython 3.11 keeps the parser's recursion depth in state all threads share, and a
# parse on the query pool at the same time may fail this one with "AST constructor
# recursion depth mismatch" (seen once in the held-out next-identifier run, stop 44).
PARSE_ERRORS = (SyntaxError, ValueError, SystemError)


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
    except PARSE_ERRORS:
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
    return {a.arg for a in _arguments(arguments)}


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


# Past this, parsing costs more than the question it replaces (and the user's file is odd).
MAX_SCOPE_DOCUMENT = 2_000_000
_FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef
_COMPREHENSION = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp


def names_in_scope(document: str, offset: int) -> frozenset[str] | None:
    """The names a statement starting at ``offset`` (code points into ``document``, as
    ``scope_query`` in ``names.py`` gives them) can read without being undefined (pylint
    E0602's sense), builtins left out: every name bound anywhere in the module, in each
    enclosing function (parameters included) and, for a statement directly in a class
    body, in that class body; a class's names are not visible in its methods, nor a
    comprehension's variables outside it. Permissive: a name bound after ``offset``
    counts. None when a static answer cannot be trusted and the analysis must be asked:
    the document does not parse, is over :data:`MAX_SCOPE_DOCUMENT`, no statement
    starts at ``offset``, or a visible scope has ``from x import *``."""
    if not 0 <= offset <= len(document):
        raise ValueError(f"offset {offset} is outside a document of {len(document)}")
    if len(document) > MAX_SCOPE_DOCUMENT:
        return None
    if "\r" in document:  # ast counts lines after universal newlines: so must the offset
        offset = len(_universal(document[:offset]))
        document = _universal(document)
    try:
        tree = ast.parse(document)
    except (*PARSE_ERRORS, RecursionError, MemoryError):
        return None
    line_start = document.rfind("\n", 0, offset) + 1
    position = (document.count("\n", 0, offset) + 1, len(document[line_start:offset].encode()))
    chain = _enclosing_scopes(tree, position)
    if chain is None:
        return None
    names: set[str] = set()
    for depth, scope in enumerate(chain):
        if isinstance(scope, ast.ClassDef) and depth < len(chain) - 1:
            names.update(_type_parameters(scope))  # a class body is not its methods' scope
            continue
        found = _scope_bindings(scope)
        if found is None:
            return None
        names |= found
    if "global" in document:  # ``global x`` in any function binds a module name
        names.update(_global_declarations(tree))
    return frozenset(names)


def _universal(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _enclosing_scopes(tree: ast.Module, position: tuple[int, int]) -> list[ast.AST] | None:
    """The module, then each class and function around the statement that starts at
    ``position`` (1-based line, UTF-8 byte column), outermost first. None when no
    statement starts there (the position is inside a string, say)."""
    chain: list[ast.AST] = [tree]
    node: ast.AST = tree
    while True:
        inner = None
        for statement in _statements(node):
            start = (statement.lineno, statement.col_offset)
            if start == position:
                return chain
            end = (statement.end_lineno or 0, statement.end_col_offset or 0)
            if start < position < end:
                inner = statement
                break
        if inner is None:
            return None
        if isinstance(inner, _FUNCTION | ast.ClassDef):
            chain.append(inner)
        node = inner


def _statements(node: ast.AST) -> list[ast.stmt]:
    """The statements directly in ``node``'s blocks: its body, ``else``, ``finally``, and
    the bodies of its ``except`` handlers and ``match`` cases."""
    found: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list):
            found += block
    for part in [*getattr(node, "handlers", ()), *getattr(node, "cases", ())]:
        found += part.body
    return found


def _global_declarations(tree: ast.Module) -> set[str]:
    """The names of every ``global`` statement, however deep (statements only are walked:
    a tenth of a whole-tree walk)."""
    names: set[str] = set()
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        pending.extend(_statements(node))
    return names


def _scope_bindings(scope: ast.AST) -> set[str] | None:
    """Every name ``scope`` (the module, a class or a function) binds in its own body, the
    names of nested defs and classes included but not what those bind; a function's
    parameters and type parameters. None for a ``from x import *``."""
    names: set[str] = set()
    pending: list[tuple[ast.AST, bool]] = []  # (node, inside a comprehension)
    if isinstance(scope, _FUNCTION):
        names.update(_parameters(scope.args))
        names.update(_type_parameters(scope))
    if isinstance(scope, ast.ClassDef):
        names.update(_type_parameters(scope))
    for statement in getattr(scope, "body", []):
        pending.append((statement, False))
    while pending:
        node, comprehension = pending.pop()
        if isinstance(node, _FUNCTION | ast.ClassDef):
            if isinstance(node, ast.ClassDef):
                outside: list[ast.AST] = [*node.bases, *node.keywords]
            else:
                arguments = node.args
                outside = [*arguments.defaults, *(d for d in arguments.kw_defaults if d)]
                outside += [a.annotation for a in _arguments(arguments) if a.annotation]
                outside += [node.returns] if node.returns else []
            names.add(node.name)
            pending.extend((n, comprehension) for n in [*node.decorator_list, *outside])
            continue  # the body is the nested scope's own
        if isinstance(node, ast.Lambda):
            outside = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            pending.extend((n, comprehension) for n in outside)
            continue
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)  # from inside a comprehension too: binds out here
        elif comprehension:
            pass  # a comprehension's own targets stay in the comprehension
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                return None
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        inside = comprehension or isinstance(node, _COMPREHENSION)
        pending.extend((child, inside) for child in ast.iter_child_nodes(node))
    return names


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return every + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]


def _type_parameters(node: ast.AST) -> set[str]:
    """PEP 695's ``def f[T]()`` / ``class C[T]``: visible in the body (Python 3.12+)."""
    return {p.name for p in getattr(node, "type_params", ()) if hasattr(p, "name")}
