"""The ChatLSP label set (``bench/chatlsp/labels.toml``) and the corruption rule.

Each case is a labelled hole in the project under ``bench/chatlsp/project``: a
file, the text the cursor follows, and the expected type, relevant types and
headers there. :func:`document_from` gives the text an editor would send (the
rest of the cursor's line deleted).

:func:`corrupt` misspells one identifier of a case's *true rest* (``+ "_x"``),
so that the completion has a static error errorReport must report:

1. the first attribute loaded from a receiver whose type is *declared* where
   the cursor is: ``self`` (a method's first parameter), a parameter with an
   annotation, or a module-level name (class, import, function, constant) that
   no enclosing function binds; nothing that the function rebinds (assignment,
   loop, comprehension or lambda variable) counts. ``self.levels`` becomes
   ``self.levels_x``; pylint's E1101 must report it.
2. else the first name loaded (a call, a variable, a builtin): ``sorted(``
   becomes ``sorted_x(``; pyflakes' F821 (or pylint's E0602) must report it.
3. else (``None``, ``[]``, ``{``) nothing.

Used by bench/chatlsp/run.py and errors_bench.py, and checked by
tests/unit/test_chatlsp_labels.py.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2] / "bench" / "chatlsp"
PROJECT = HERE / "project"
LABELS = HERE / "labels.toml"
METHODS = ("expected_type", "relevant_types", "relevant_headers")
ORIGINS = ("return", "yield", "assignment", "attribute", "argument", "default", "element", "none")
TOP_HEADERS = 10
MIN_CASES = 60
SUFFIX = "_x"
EXPECTED_CODES = {"attribute": ("E1101",), "name": ("F821", "E0602")}
TUTORIAL_MUST_SAY = ("Python 3.", "4 spaces")
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Corruption:
    """A true rest with one identifier misspelt, and the codes that must report it."""

    kind: str  # "attribute" or "name"
    target: str  # what was misspelt, as written: "self.levels", "sorted"
    completion: str
    codes: tuple[str, ...]


# ---- the cases (pure) ----------------------------------------------------------------


def true_rest(text: str, cursor: str) -> str:
    """What ``run.document_from`` deletes: the cursor line after the cursor, without its break."""
    end = text.index(cursor) + len(cursor)
    line_end = text.find("\n", end)
    return text[end:] if line_end < 0 else text[end:line_end]


def corrupt(text: str, line: int, column: int, rest: str) -> Corruption | None:
    """The broken variant of ``rest`` (at 0-based ``line``, code-point ``column`` of the
    original ``text``) by the rule of the module docstring; None when the rule finds nothing
    (or ``text`` does not parse)."""
    if not rest.strip():
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for kind, found in candidates(tree, text, declared_receivers(tree, line)).items():
        for start, identifier, owner in sorted(found):
            if not _on_rest(text, line, column, start):
                continue
            at = start - _offset(text, line, column)
            if rest[at : at + len(identifier)] != identifier:
                continue  # a position ast gives wrongly (old f-strings): never guess
            misspelt = identifier + SUFFIX
            if re.search(rf"\b{re.escape(misspelt)}\b", text):
                continue  # the misspelling would name something real
            completion = rest[:at] + misspelt + rest[at + len(identifier) :]
            return Corruption(kind, owner + identifier, completion, EXPECTED_CODES[kind])
    return None


def candidates(
    tree: ast.Module, text: str, declared: set[str]
) -> dict[str, list[tuple[int, str, str]]]:
    """What could be misspelt, by kind in the rule's order: (code-point offset in ``text``,
    identifier, its receiver and a dot or ""), for every attribute of a ``declared``
    receiver and every name that is read."""
    found: dict[str, list[tuple[int, str, str]]] = {"attribute": [], "name": []}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            receiver = node.value
            if isinstance(receiver, ast.Name) and receiver.id in declared:
                end = _chars(text, node.end_lineno, node.end_col_offset)
                found["attribute"].append((end - len(node.attr), node.attr, f"{receiver.id}."))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found["name"].append((_chars(text, node.lineno, node.col_offset), node.id, ""))
    return found


def declared_receivers(tree: ast.Module, line: int) -> set[str]:
    """Names at 0-based ``line`` whose type a static checker knows (module docstring, rule 1)."""
    chain = enclosing_functions(tree, line)
    rebound = set().union(*(bound_names(function) for function in chain))
    declared = module_names(tree) - rebound
    if not chain:
        return declared
    function = chain[-1]
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    own = [*positional, *arguments.kwonlyargs]
    inner = bound_names(function, own_parameters=False)
    declared |= {arg.arg for arg in own if arg.annotation is not None} - inner
    if positional and positional[0].arg == "self" and "self" not in inner:
        declared.add("self")
    return declared


def enclosing_functions(tree: ast.Module, line: int) -> list[FunctionNode]:
    """The functions whose body holds 0-based ``line``, outermost first (not those whose
    header holds it: a default is evaluated outside its function)."""
    holding = [
        node
        for node in ast.walk(tree)
        if isinstance(node, FunctionNode)
        and node.body[0].lineno - 1 <= line <= (node.end_lineno or node.lineno) - 1
    ]
    return sorted(holding, key=lambda node: node.lineno)


def bound_names(function: FunctionNode, *, own_parameters: bool = True) -> set[str]:
    """Every name the function binds: assignments, loop, comprehension, ``with`` and lambda
    variables, nested parameters, and its own parameters unless ``own_parameters`` is off."""
    own = {id(arg) for arg in _parameters(function)}
    found: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            found.add(node.id)
        elif isinstance(node, ast.arg) and (own_parameters or id(node) not in own):
            found.add(node.arg)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            found.update(node.names)
    return found


def module_names(tree: ast.Module) -> set[str]:
    """Names bound by the module's own top-level statements."""
    found: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            found.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
        elif isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            found.add(statement.name)
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            found.update(
                node.id
                for target in targets
                for node in ast.walk(target)
                if isinstance(node, ast.Name)
            )
    return found


def _parameters(function: FunctionNode) -> list[ast.arg]:
    arguments = function.args
    extra = [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, *extra]


def _chars(text: str, lineno: int | None, byte_column: int | None) -> int:
    """The code-point offset in ``text`` of ast's (1-based line, UTF-8 byte column)."""
    lines = text.split("\n")
    index = (lineno or 1) - 1
    prefix = lines[index].encode("utf-8")[: byte_column or 0].decode("utf-8", errors="ignore")
    return sum(len(each) + 1 for each in lines[:index]) + len(prefix)


def _offset(text: str, line: int, column: int) -> int:
    return sum(len(each) + 1 for each in text.split("\n")[:line]) + column


def _on_rest(text: str, line: int, column: int, start: int) -> bool:
    """Whether code-point offset ``start`` lies on ``line`` at or after ``column``."""
    line_end = text.find("\n", _offset(text, line, 0))
    return _offset(text, line, column) <= start < (len(text) if line_end < 0 else line_end)


@dataclass(frozen=True)
class Case:
    """One labelled hole; see the comment at the top of ``labels.toml``."""

    id: str
    file: str
    cursor: str
    expected: str
    origin: str
    types: tuple[str, ...]
    headers: tuple[str, ...]
    headers_absent: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Document:
    """The text an editor would send, and the 0-based line and code-point column of the cursor."""

    path: str
    source: str
    line: int
    column: int


def load_cases(path: Path = LABELS) -> list[Case]:
    with path.open("rb") as handle:
        raw = tomllib.load(handle)
    return [case_from(entry) for entry in raw.get("case", [])]


def case_from(entry: dict[str, Any]) -> Case:
    """A case from its TOML table; list fields become tuples so cases stay hashable."""
    return Case(
        id=entry["id"],
        file=entry["file"],
        cursor=entry["cursor"],
        expected=entry["expected"],
        origin=entry["origin"],
        types=tuple(entry["types"]),
        headers=tuple(entry["headers"]),
        headers_absent=tuple(entry.get("headers_absent", ())),
        note=entry.get("note", ""),
    )


def label_problems(cases: list[Case], project: Path = PROJECT) -> list[str]:
    """Everything wrong with the labels file itself; empty when it is well-formed."""
    problems = []
    if len(cases) < MIN_CASES:
        problems.append(f"{len(cases)} cases, fewer than {MIN_CASES}")
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            problems.append(f"duplicate id {case.id}")
        seen.add(case.id)
        if case.origin not in ORIGINS:
            problems.append(f"{case.id}: unknown origin {case.origin!r}")
        if (case.origin == "none") != (case.expected == ""):
            problems.append(f"{case.id}: origin 'none' goes with expected = '' and only with it")
        path = project / case.file
        if not path.is_file():
            problems.append(f"{case.id}: no file {case.file}")
            continue
        count = path.read_text(encoding="utf-8").count(case.cursor)
        if count != 1:
            problems.append(f"{case.id}: cursor occurs {count} times in {case.file}")
    return problems


def document_from(text: str, cursor: str) -> tuple[str, int, int]:
    """The text with the cursor at the end of ``cursor`` and the rest of that line deleted.

    Returns (source, line, column): 0-based line, column in code points.
    """
    end = text.index(cursor) + len(cursor)
    line_end = text.find("\n", end)
    source = text[:end] + ("" if line_end < 0 else text[line_end:])
    line = text.count("\n", 0, end)
    column = end - (text.rfind("\n", 0, end) + 1)
    return source, line, column


def document_for(case: Case, project: Path = PROJECT) -> Document:
    path = project / case.file
    source, line, column = document_from(path.read_text(encoding="utf-8"), case.cursor)
    return Document(str(path), source, line, column)


def normalise(annotation: str) -> str:
    """Annotations compare with all whitespace removed: ``X | None`` equals ``X|None``."""
    return re.sub(r"\s+", "", annotation)


def annotation_of(got: Any) -> str:
    """The label form of an ExpectedType answer: its annotation, or "" for None."""
    return "" if got is None else normalise(got.annotation)


def type_names(got: Iterable[Any]) -> set[str]:
    return {definition.name for definition in got}


def header_names(got: Iterable[Any]) -> list[str]:
    """The names among the top 10, in the order given."""
    return [header.name for header in list(got)[:TOP_HEADERS]]


def tutorial_ok(text: Any) -> bool:
    return isinstance(text, str) and all(fact in text for fact in TUTORIAL_MUST_SAY)
