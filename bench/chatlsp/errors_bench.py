"""ChatLSP errorReport and aiTutorial on the labelled holes of ``labels.toml``.

errorReport is checked twice per case, by one ErrorChecker (root = the project,
no environment) for the whole run, as one serves a whole session:

- **clean**: the completion is the case's *true rest*, the rest of the cursor's
  line that ``run.document_from`` deleted, so the checked text is the original
  file. Real code must give no problem (needsRepair false): the false-positive
  check.
- **broken**: one identifier of the true rest misspelt (``+ "_x"``) by
  :func:`corrupt`, so that the completion has a static error errorReport must
  report on its own lines, with the code that names it:

  1. the first attribute loaded from a receiver whose type is *declared* where
     the cursor is: ``self`` (a method's first parameter), a parameter with an
     annotation, or a module-level name (class, import, function, constant) that
     no enclosing function binds; nothing that the function rebinds (assignment,
     loop, comprehension or lambda variable) counts. ``self.levels`` becomes
     ``self.levels_x``; pylint's E1101 must report it.
  2. else the first name loaded (a call, a variable, a builtin): ``sorted(``
     becomes ``sorted_x(``; pyflakes' F821 (or pylint's E0602) must report it.
  3. else (``None``, ``[]``, ``{``) the case has no broken check, counted as skipped.

  Attributes of undeclared receivers (loop variables, untyped parameters,
  call results) are left alone: no static checker knows their type, so missing
  them says nothing about errorReport. Positions come from ``ast`` on the
  original file; nothing is labelled by hand.

A case whose true rest is empty (cursor at the end of its line) has no errorReport
check at all, counted as skipped. The very first check of the run starts the
pylint worker and is reported on its own; p50 and p90 are over the other checks.
A pylint timeout (the worker's warning) is recorded on the check it hit.

aiTutorial runs once per file of the project, with the file as the document; an
answer is right when it names the Python version ("Python 3.") and the project's
indentation ("4 spaces"). The first call is reported on its own here too.
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.chatlsp.run import (
    PROJECT,
    TARGET_MS,
    Case,
    Document,
    Extra,
    document_for,
    ms_text,
    percent_text,
    quantile,
    rate,
    timed,
)

SUFFIX = "_x"
EXPECTED_CODES = {"attribute": ("E1101",), "name": ("F821", "E0602")}
TUTORIAL_MUST_SAY = ("Python 3.", "4 spaces")
ERRORS_LOGGER = "steerlsp.server.chatlsp.errors"
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


# ---- errorReport ---------------------------------------------------------------------------


@contextmanager
def pylint_warnings() -> Iterator[list[str]]:
    """The errors module's warnings while the block runs (a pylint timeout is one)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.WARNING)
    logger = logging.getLogger(ERRORS_LOGGER)
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def problems_shown(problems: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"code": p.code, "message": p.message, "line": p.line} for p in problems]


def run_check(
    checker: Any, doc: Document, completion: str, warnings: list[str]
) -> tuple[list[Any] | None, dict[str, Any]]:
    """One timed check of ``completion`` at the cursor: (problems or None on a crash, record)."""
    from steerlsp.server.chatlsp.errors import with_completion

    checked = with_completion(doc.source, doc.line, doc.column, completion)
    seen = len(warnings)
    problems, ms, error = timed(lambda: checker.check(checked, doc.path))
    record = {
        "ms": ms,
        "error": error,
        "problems": None if problems is None else problems_shown(problems),
        "warnings": warnings[seen:],
        "lines": list(checked.lines),
    }
    return problems, record


def check_case(checker: Any, case: Case, project: Path, warnings: list[str]) -> dict[str, Any]:
    """The clean and broken checks of one case, or why it has none."""
    from steerlsp.server.chatlsp.errors import needs_repair

    doc = document_for(case, project)
    text = (project / case.file).read_text(encoding="utf-8")
    rest = true_rest(text, case.cursor)
    row: dict[str, Any] = {"id": case.id, "file": case.file, "rest": rest}
    if not rest.strip():
        return {**row, "skipped": "empty rest", "clean": None, "broken": None}
    problems, clean = run_check(checker, doc, rest, warnings)
    clean["ok"] = problems is not None and not needs_repair(problems)
    row.update(skipped=None, clean=clean, broken=None)
    corruption = corrupt(text, doc.line, doc.column, rest)
    if corruption is None:
        return {**row, "broken_skipped": "nothing to misspell"}
    problems, broken = run_check(checker, doc, corruption.completion, warnings)
    reported = {p.code for p in problems or ()}
    broken["ok"] = (
        bool(problems) and needs_repair(problems) and bool(reported & {*corruption.codes})
    )
    row["broken"] = {**asdict(corruption), **broken}
    return {**row, "broken_skipped": None}


def measure_errors(cases: list[Case], project: Path = PROJECT) -> list[dict[str, Any]]:
    """Every case's errorReport checks, in order, with one ErrorChecker for the run."""
    from steerlsp.server.chatlsp.errors import ErrorChecker

    checker = ErrorChecker(str(project), None)
    try:
        with pylint_warnings() as warnings:
            return [check_case(checker, case, project, warnings) for case in cases]
    finally:
        checker.close()


def checks(rows: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every check of the run in the order it ran: ("clean" | "broken", record)."""
    return [(kind, row[kind]) for row in rows for kind in ("clean", "broken") if row.get(kind)]


def latency(records: list[dict[str, Any]], key: str = "ms") -> dict[str, Any]:
    values = [record[key] for record in records]
    return {"p50_ms": quantile(values, 50), "p90_ms": quantile(values, 90)}


def summarize_errors(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and latency of the clean and broken checks; the first check stands apart."""
    ran = checks(rows)
    first = ran[0][1] if ran else None
    summary: dict[str, Any] = {"first_call_ms": first["ms"] if first else None}
    for kind in ("clean", "broken"):
        records = [record for each, record in ran if each == kind]
        warm = [record for record in records if record is not first]
        summary[kind] = {
            **rate(sum(record["ok"] for record in records), len(records)),
            **latency(warm),
            "errors": sum(record["error"] is not None for record in records),
        }
    summary["all"] = latency([record for _, record in ran[1:]])
    broken = [row["broken"] for row in rows if row.get("broken")]
    summary["broken_by_kind"] = {
        kind: rate(
            sum(b["ok"] for b in broken if b["kind"] == kind),
            sum(b["kind"] == kind for b in broken),
        )
        for kind in EXPECTED_CODES
    }
    summary["skipped"] = {
        "empty_rest": sum(row["skipped"] == "empty rest" for row in rows),
        "no_broken_variant": sum(row.get("broken_skipped") is not None for row in rows),
    }
    summary["pylint_warnings"] = sum(len(record["warnings"]) for _, record in ran)
    return summary


def error_mismatches(rows: list[dict[str, Any]]) -> list[str]:
    """One markdown line per failed check: what was completed and what came back."""
    lines = []
    for row in rows:
        for kind in ("clean", "broken"):
            record = row.get(kind)
            if not record or record["ok"]:
                continue
            completion = row["rest"] if kind == "clean" else record["completion"]
            got = record["error"] or "; ".join(
                f"{p['code']} {p['message']}" for p in record["problems"] or ()
            )
            wanted = "no problem" if kind == "clean" else " or ".join(record["codes"])
            warned = "".join(f" (warning: {message})" for message in record["warnings"])
            lines.append(
                f"- `{row['id']}` **errorReport {kind}** `{completion}`: expected {wanted}, "
                f"got {got or 'none'}{warned}"
            )
    return lines


# ---- aiTutorial --------------------------------------------------------------------------


def tutorial_ok(text: Any) -> bool:
    return isinstance(text, str) and all(fact in text for fact in TUTORIAL_MUST_SAY)


def measure_tutorial(project: Path = PROJECT) -> list[dict[str, Any]]:
    """aiTutorial once per file of the project, that file being the document."""
    from steerlsp.server.chatlsp.tutorial import tutorial

    rows = []
    for path in sorted(project.rglob("*.py")):
        source = path.read_text(encoding="utf-8")

        def ask(source: str = source) -> str:
            return tutorial(str(project), None, source)

        text, ms, error = timed(ask)
        rows.append(
            {
                "file": path.relative_to(project).as_posix(),
                "ok": error is None and tutorial_ok(text),
                "ms": ms,
                "error": error,
                "text": text,
            }
        )
    return rows


def summarize_tutorial(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **rate(sum(row["ok"] for row in rows), len(rows)),
        **latency(rows[1:]),
        "first_call_ms": rows[0]["ms"] if rows else None,
        "errors": sum(row["error"] is not None for row in rows),
    }


def tutorial_mismatches(rows: list[dict[str, Any]]) -> list[str]:
    return [
        f"- `{row['file']}` **aiTutorial**: expected {' and '.join(TUTORIAL_MUST_SAY)}, "
        f"got `{row['error'] or row['text']!r}`"
        for row in rows
        if not row["ok"]
    ]


# ---- the report's share ---------------------------------------------------------------


def extra(
    summary: dict[str, Any], error_rows: list[dict[str, Any]], tutorial_rows: list[dict[str, Any]]
) -> Extra:
    """errorReport's and aiTutorial's rows, section and mismatches for ``run.report``."""
    return Extra(
        rows=table_rows(summary),
        section=report_section(summary["error_report"]),
        mismatches=error_mismatches(error_rows) + tutorial_mismatches(tutorial_rows),
    )


def table_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows in ``run.table_rows``' shape; the run's first check goes on the clean row."""
    errors, tutorial = summary["error_report"], summary["ai_tutorial"]
    rows = [
        {
            "name": f"error_report ({kind})",
            "score": errors[kind],
            "p50": errors[kind]["p50_ms"],
            "p90": errors[kind]["p90_ms"],
            "target": TARGET_MS["error_report"],
            "first": errors["first_call_ms"] if kind == "clean" else None,
            "errors": errors[kind]["errors"],
        }
        for kind in ("clean", "broken")
    ]
    rows.append(
        {
            "name": "ai_tutorial",
            "score": tutorial,
            "p50": tutorial["p50_ms"],
            "p90": tutorial["p90_ms"],
            "first": tutorial["first_call_ms"],
            "errors": tutorial["errors"],
        }
    )
    return rows


def report_section(errors: dict[str, Any]) -> list[str]:
    """What the table does not say: broken checks by kind, skips, all checks, pylint's health."""
    kinds, skipped, every = errors["broken_by_kind"], errors["skipped"], errors["all"]
    return [
        "",
        "## errorReport",
        "",
        "clean: the rest of the cursor's line that the document lost, as the completion (no "
        "problem allowed); broken: that rest with one identifier misspelt, an attribute of a "
        "declared receiver (E1101 expected) or else a name (F821/E0602); see "
        "`bench/chatlsp/errors_bench.py`.",
        "",
        f"- broken, attribute misspelt: {percent_text(kinds['attribute'])}; "
        f"name misspelt: {percent_text(kinds['name'])}",
        f"- skipped: nothing after the cursor (no check) in {skipped['empty_rest']}, "
        f"nothing to misspell (no broken check) in {skipped['no_broken_variant']} of the cases",
        f"- every check but the first: p50 {ms_text(every['p50_ms'])} ms, "
        f"p90 {ms_text(every['p90_ms'])} ms (target p50 ≤ {TARGET_MS['error_report']:.0f} ms); "
        f"the first check, which starts pylint: {ms_text(errors['first_call_ms'])} ms",
        f"- pylint warnings (a timeout answers without pylint): {errors['pylint_warnings']}",
    ]
