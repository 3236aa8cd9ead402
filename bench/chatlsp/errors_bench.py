"""ChatLSP errorReport and aiTutorial on the labelled holes of ``labels.toml``.

errorReport is checked twice per case, by one ErrorChecker (root = the project,
no environment) for the whole run, as one serves a whole session:

- **clean**: the completion is the case's *true rest*, the rest of the cursor's
  line that ``run.document_from`` deleted, so the checked text is the original
  file. Real code must give no problem (needsRepair false): the false-positive
  check.
- **broken**: one identifier of the true rest misspelt (``+ "_x"``) by
  :func:`corrupt`, so that the completion has a static error errorReport must
  report on its own lines, with the code that names it. The rule (which
  identifier, and which code must report it) is in tests/helpers/chatlsp_labels.py;
  a case where it finds nothing has no broken check, counted as skipped.
  Positions come from ``ast`` on the original file; nothing is labelled by hand.

A case whose true rest is empty (cursor at the end of its line) has no errorReport
check at all, counted as skipped. The very first check of the run starts the
pylint worker and is reported on its own; p50 and p90 are over the other checks.
A pylint timeout (the worker's warning) is recorded on the check it hit.

aiTutorial runs once per file of the project, with the file as the document; an
answer is right when it names the Python version ("Python 3.") and the project's
indentation ("4 spaces"). The first call is reported on its own here too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.chatlsp.run import (
    TARGET_MS,
    Extra,
    ms_text,
    percent_text,
    quantile,
    rate,
    timed,
)
from tests.helpers.chatlsp_labels import (
    EXPECTED_CODES,
    PROJECT,
    TUTORIAL_MUST_SAY,
    Case,
    Document,
    corrupt,
    document_for,
    true_rest,
    tutorial_ok,
)

ERRORS_LOGGER = "steerlsp.server.chatlsp.errors"


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
