"""ChatLSP accuracy and latency on labelled holes: the three semantics methods here,
errorReport and aiTutorial in ``errors_bench.py``.

Every case of ``labels.toml`` names a file of ``project/`` and a cursor substring;
the document is that file with the cursor at the substring's end and the rest of
that line deleted (a user typing there). :class:`Semantics` (root = the project,
no environment) answers expectedType, relevantTypes and relevantHeaders twice per
case: the first, cold call and the second, warm one are timed separately, and the
warm answer is scored.

Scores: expectedType is an exact match of the annotation with whitespace removed
(an empty label must give None); relevantTypes is set equality of the names;
relevantHeaders needs every labelled header in the top 10 and no absent one.
Accuracy is broken down by the label's origin. errorReport must find nothing in
the deleted rest of the line and must report a misspelling put into it;
aiTutorial must name the Python version and the indentation (``errors_bench.py``
says how). The issue's targets stand beside the p50s: 150 ms for the semantics
methods, 1 s for errorReport (pylint included).

    python bench/chatlsp/run.py --out bench/results

Writes ``chatlsp.json`` (rows and summary), ``chatlsp.md`` (with every mismatch,
expected against got) and ``chatlsp.png``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.helpers.chatlsp_labels import (
    HERE,
    LABELS,
    METHODS,
    ORIGINS,
    PROJECT,
    Case,
    annotation_of,
    document_for,
    header_names,
    label_problems,
    load_cases,
    normalise,
    type_names,
)

TARGET_MS = {"semantics": 150.0, "error_report": 1000.0}  # the p50 targets


def expected_type_ok(case: Case, got: Any) -> bool:
    return annotation_of(got) == normalise(case.expected)


def relevant_types_ok(case: Case, got: Any) -> bool:
    return type_names(got) == set(case.types)


def relevant_headers_ok(case: Case, got: Any) -> bool:
    names = set(header_names(got))
    return set(case.headers) <= names and not names & set(case.headers_absent)


CHECKS: dict[str, Callable[[Case, Any], bool]] = {
    "expected_type": expected_type_ok,
    "relevant_types": relevant_types_ok,
    "relevant_headers": relevant_headers_ok,
}


def shown(method: str, got: Any) -> Any:
    """A JSON-able view of an answer, for the rows and the mismatch list."""
    if method == "expected_type":
        return None if got is None else {"annotation": got.annotation, "origin": got.origin}
    if method == "relevant_types":
        return sorted(type_names(got))
    return [header.name for header in got]


def wanted(method: str, case: Case) -> Any:
    if method == "expected_type":
        return case.expected or None
    if method == "relevant_types":
        return sorted(case.types)
    return {"present": list(case.headers), "absent": list(case.headers_absent)}


def difference(method: str, case: Case, got: Any) -> str:
    """What a wrong answer lacks or has too many of, in a few words."""
    if method == "expected_type":
        return f"expected {case.expected or 'None'!r}, got {annotation_of(got) or 'None'!r}"
    if method == "relevant_types":
        names = type_names(got)
        return f"missing {sorted(set(case.types) - names)}, extra {sorted(names - set(case.types))}"
    top = set(header_names(got))
    missing = [name for name in case.headers if name not in top]
    unwanted = [name for name in case.headers_absent if name in top]
    return f"missing {missing}, unwanted {unwanted}"


def timed(call: Callable[[], Any]) -> tuple[Any, float, str | None]:
    """(answer, ms, error): an exception is a miss, recorded as its text."""
    started = time.perf_counter()
    try:
        answer, error = call(), None
    except Exception as exc:  # a crash on one case must not end the benchmark
        answer, error = None, f"{type(exc).__name__}: {exc}"
    return answer, (time.perf_counter() - started) * 1000, error


def measure_case(semantics: Any, case: Case, project: Path) -> dict[str, Any]:
    """Each method cold, then warm; the warm answer is scored."""
    doc = document_for(case, project)
    row: dict[str, Any] = {"id": case.id, "file": case.file, "origin": case.origin}
    for method in METHODS:
        ask = getattr(semantics, method)

        def call(ask: Any = ask) -> Any:
            return ask(doc.source, doc.path, doc.line, doc.column)

        _, cold_ms, _ = timed(call)
        got, warm_ms, error = timed(call)
        ok = error is None and CHECKS[method](case, got)
        row[method] = {
            "ok": ok,
            "cold_ms": cold_ms,
            "warm_ms": warm_ms,
            "error": error,
            "got": None if error else shown(method, got),
            "wanted": wanted(method, case),
            "diff": None if ok else (error or difference(method, case, got)),
        }
    answer = row["expected_type"]["got"]
    row["got_origin"] = answer["origin"] if answer else None
    return row


def measure(cases: list[Case], project: Path = PROJECT) -> dict[str, Any]:
    from steerlsp.server.chatlsp.semantics import Semantics

    started = time.perf_counter()
    semantics = Semantics(str(project), None)
    startup_ms = (time.perf_counter() - started) * 1000
    rows = [measure_case(semantics, case, project) for case in cases]
    return {"startup_ms": startup_ms, "rows": rows}


def quantile(values: list[float], q: int) -> float | None:
    """The q-th percentile (50, 90); None without samples."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def rate(hits: int, total: int) -> dict[str, Any]:
    return {"hits": hits, "total": total, "accuracy": hits / total if total else None}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    methods = {}
    for method in METHODS:
        warm = [row[method]["warm_ms"] for row in rows]
        cold = [row[method]["cold_ms"] for row in rows]
        methods[method] = {
            **rate(sum(row[method]["ok"] for row in rows), len(rows)),
            "errors": sum(row[method]["error"] is not None for row in rows),
            "warm_p50_ms": quantile(warm, 50),
            "warm_p90_ms": quantile(warm, 90),
            "cold_p50_ms": quantile(cold, 50),
            "cold_p90_ms": quantile(cold, 90),
            "first_call_ms": cold[0] if cold else None,
        }
    by_origin = {}
    for origin in ORIGINS:
        subset = [row for row in rows if row["origin"] == origin]
        if subset:
            by_origin[origin] = {
                method: rate(sum(row[method]["ok"] for row in subset), len(subset))
                for method in METHODS
            }
    labelled = [row for row in rows if row["origin"] != "none" and row["got_origin"]]
    origin_agrees = sum(row["got_origin"] == row["origin"] for row in labelled)
    return {
        "methods": methods,
        "by_origin": by_origin,
        "origin_agreement": rate(origin_agrees, len(labelled)),
    }


def percent_text(score: dict[str, Any]) -> str:
    if score["accuracy"] is None:
        return "-"
    return f"{score['accuracy']:.0%} ({score['hits']}/{score['total']})"


def ms_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def mismatches(rows: list[dict[str, Any]]) -> list[str]:
    """One markdown line per failed (case, method): expected against got."""
    lines = []
    for row in rows:
        for method in METHODS:
            result = row[method]
            if result["ok"]:
                continue
            got = result["error"] or json.dumps(result["got"])
            lines.append(
                f"- `{row['id']}` ({row['origin']}) **{method}**: {result['diff']}; "
                f"expected `{json.dumps(result['wanted'])}`, got `{got}`"
            )
    return lines


def table_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per semantics method, in the shape every row of the tables and the plot has.

    p50/p90 are the warm calls; ``first`` is the run's first call. ``errors_bench``
    gives errorReport's and aiTutorial's rows in the same shape.
    """
    return [
        {
            "name": method,
            "score": stats,
            "p50": stats["warm_p50_ms"],
            "p90": stats["warm_p90_ms"],
            "target": TARGET_MS["semantics"],
            "cold_p50": stats["cold_p50_ms"],
            "cold_p90": stats["cold_p90_ms"],
            "first": stats["first_call_ms"],
            "errors": stats["errors"],
        }
        for method, stats in summary["methods"].items()
    ]


@dataclass(frozen=True)
class Extra:
    """What the errorReport and aiTutorial measurements add to the report."""

    rows: list[dict[str, Any]] = field(default_factory=list)  # in table_rows' shape
    section: list[str] = field(default_factory=list)  # markdown lines after "By origin"
    mismatches: list[str] = field(default_factory=list)


def target_text(value: float | None) -> str:
    return "-" if value is None else f"≤ {value:.0f}"


def report(
    summary: dict[str, Any],
    rows: list[dict[str, Any]],
    meta: dict[str, Any],
    extra: Extra | None = None,
) -> str:
    extra = extra or Extra()
    out = [
        "# ChatLSP on labelled holes",
        "",
        f"{meta['cases']} cases in `bench/chatlsp/labels.toml`, project `bench/chatlsp/project`; "
        f"Semantics started in {ms_text(meta['startup_ms'])} ms. Latency in ms: for the semantics "
        "methods p50/p90 are the second call on a case, cold the first; for errorReport and "
        "aiTutorial every call but the run's first; first = the run's very first call. "
        "Target = the issue's p50 target.",
        "",
        "| method | accuracy | p50 | target | p90 | cold p50 | cold p90 | first | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table_rows(summary) + extra.rows:
        cells = [
            row["name"],
            percent_text(row["score"]),
            ms_text(row["p50"]),
            target_text(row.get("target")),
            *(ms_text(row.get(key)) for key in ("p90", "cold_p50", "cold_p90", "first")),
            str(row["errors"]),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## By origin", "", "| origin | " + " | ".join(METHODS) + " |"]
    out.append("|---" * (len(METHODS) + 1) + "|")
    for origin, rates in summary["by_origin"].items():
        out.append(f"| {origin} | " + " | ".join(percent_text(rates[m]) for m in METHODS) + " |")
    agreement = summary["origin_agreement"]
    out += [
        "",
        f"ExpectedType.origin agrees with the label on {percent_text(agreement)} answered cases.",
    ]
    out += extra.section
    wrong = mismatches(rows) + extra.mismatches
    out += ["", f"## Mismatches ({len(wrong)})", "", *(wrong or ["None."]), ""]
    return "\n".join(out)


def plot(summary: dict[str, Any], extra: Extra, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(summary["methods"])
    fig, (origin_ax, acc_ax, lat_ax) = plt.subplots(
        1, 3, figsize=(17, 4.8), gridspec_kw={"width_ratios": [1.4, 1, 1.2]}
    )
    groups = {"all": summary["methods"], **summary["by_origin"]}
    width = 0.8 / len(methods)
    for index, method in enumerate(methods):
        values = [(rates[method]["accuracy"] or 0) * 100 for rates in groups.values()]
        positions = [x + index * width for x in range(len(groups))]
        origin_ax.bar(positions, values, width, label=method)
    origin_ax.set_xticks([x + width for x in range(len(groups))], list(groups), rotation=30)
    origin_ax.set_ylabel("accuracy (%)")
    origin_ax.set_ylim(0, 125)
    origin_ax.set_yticks(range(0, 101, 20))
    origin_ax.set_title("Semantics accuracy by origin of the expected type")
    origin_ax.legend(fontsize="small", ncol=3, loc="upper center")

    rows = table_rows(summary) + extra.rows
    names = [row["name"] for row in rows]
    accuracy = [(row["score"]["accuracy"] or 0) * 100 for row in rows]
    acc_ax.barh(names, accuracy, color="tab:green")
    for at, row in enumerate(rows):
        acc_ax.text(1, at, percent_text(row["score"]), va="center", fontsize="small", color="white")
    acc_ax.invert_yaxis()
    acc_ax.set_xlim(0, 100)
    acc_ax.set_xlabel("accuracy (%)")
    acc_ax.set_title("Accuracy per method")

    y = list(range(len(rows)))
    lat_ax.barh([v - 0.2 for v in y], [row["p50"] or 0 for row in rows], 0.4, label="p50")
    lat_ax.barh([v + 0.2 for v in y], [row["p90"] or 0 for row in rows], 0.4, label="p90")
    targets = [(v, row["target"]) for v, row in zip(y, rows, strict=True) if row.get("target")]
    lat_ax.scatter(
        [t for _, t in targets],
        [v for v, _ in targets],
        marker="|",
        s=300,
        color="red",
        label="p50 target",
    )
    lat_ax.set_yticks(y, names)
    lat_ax.invert_yaxis()
    lat_ax.set_xscale("log")
    lat_ax.set_xlabel("ms (log)")
    lat_ax.set_title("Latency per method")
    lat_ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from bench.chatlsp import errors_bench  # here: it imports this module's helpers

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--only", help="run only the cases whose id contains this text")
    args = parser.parse_args(argv)

    cases = load_cases(args.labels)
    problems = label_problems(cases)
    if problems:
        print("labels are malformed:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    if args.only:
        cases = [case for case in cases if args.only in case.id]
    measured = measure(cases)
    rows = measured["rows"]
    error_rows = errors_bench.measure_errors(cases)
    tutorial_rows = errors_bench.measure_tutorial()
    summary = {
        **summarize(rows),
        "error_report": errors_bench.summarize_errors(error_rows),
        "ai_tutorial": errors_bench.summarize_tutorial(tutorial_rows),
    }
    meta = {"cases": len(cases), "startup_ms": measured["startup_ms"], "project": str(PROJECT)}
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "meta": meta,
        "summary": summary,
        "cases": [asdict(c) for c in cases],
        "rows": rows,
        "error_rows": error_rows,
        "tutorial_rows": tutorial_rows,
    }
    extra = errors_bench.extra(summary, error_rows, tutorial_rows)
    (args.out / "chatlsp.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    (args.out / "chatlsp.md").write_text(report(summary, rows, meta, extra), encoding="utf-8")
    plot(summary, extra, args.out / "chatlsp.png")
    for row in table_rows(summary) + extra.rows:
        goal = f" (target {target_text(row.get('target'))})" if row.get("target") else ""
        print(
            f"{row['name']:22} {percent_text(row['score']):>14}  p50 {ms_text(row['p50'])} ms{goal}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
