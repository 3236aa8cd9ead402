"""The evaluation's results: one :class:`Result` per task and configuration, and
what bench/run_tasks.py makes of them (steering counts from ``steerlsp/explain``,
outcome rates, latency percentiles, the Markdown report and the plots).

The configurations are named in ``bench/configs.toml``.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.evaltasks import OUTCOMES

CONFIGS = Path(__file__).resolve().parents[2] / "bench" / "configs.toml"
KINDS = ("changed-api", "uncommon-api", "repo-local")
BASELINE = "baseline"  # the configuration the others' latency and deprecated rate are relative to
# Per-Result steering totals, summed over the completions ``steerlsp/explain`` described.
STEERING_KEYS = (
    "completions",
    "steered",
    "queries",
    "timeouts",
    "query_errors",
    "interrupts",
    "hints",
    "walks",
    "changed",
    "waited_ms",
    "prompt_tokens",
    "rounds",
)
CONTEXT_KEYS = ("prompt_tokens", "rounds")  # ChatLSP: the prompt's size, error rounds


@dataclass
class Result:
    task: str
    kind: str
    config: str
    outcome: str
    detail: str = ""
    completion: str = ""
    static_errors: list[str] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    tests: dict[str, bool] = field(default_factory=dict)
    deprecated: list[str] = field(default_factory=list)  # deprecated APIs the completion ran
    steering: dict[str, float] = field(default_factory=dict)  # STEERING_KEYS; {}: no explain
    # Deprecated APIs the completion names, resolved statically (run or not).
    named_deprecated: list[str] = field(default_factory=list)


def load_configs(names: list[str]) -> dict[str, dict[str, Any]]:
    """Named configurations: ``steerlsp`` settings and extra CLI flags."""
    table = tomllib.loads(CONFIGS.read_text())
    missing = [n for n in names if n not in table]
    if missing:
        raise SystemExit(f"unknown configuration(s) {missing}; known: {sorted(table)}")
    return {name: table[name] for name in names}


def steering_counts(explained: Any, version: int) -> dict[str, float] | None:
    """One ``steerlsp/explain`` result as counts (STEERING_KEYS); None when it describes
    no completion of ``version`` (a cancelled or failed request is not remembered, so the
    server still describes the previous one)."""
    if not isinstance(explained, dict) or explained.get("completion") is None:
        return None
    if explained.get("version") != version:
        return None
    trace = explained.get("trace") or {}
    queries = [q for q in trace.get("queries") or [] if isinstance(q, dict)]
    return {
        "completions": 1,
        "steered": 1 if explained.get("steered") else 0,
        "queries": len(queries),
        "timeouts": sum(q.get("outcome") == "timeout" for q in queries),
        "query_errors": sum(q.get("outcome") == "error" for q in queries),
        "interrupts": len(trace.get("interrupts") or []),
        "hints": len(trace.get("hints") or []),
        "walks": len(trace.get("walks") or []),
        "changed": len(trace.get("changed") or []),
        "waited_ms": float(trace.get("waited_ms") or 0.0),
        "prompt_tokens": int(explained.get("prompt_tokens") or 0),
        "rounds": int(explained.get("rounds") or 0),
    }


def add_counts(total: dict[str, float], counts: dict[str, float] | None) -> dict[str, float]:
    """``total`` plus ``counts`` key by key (``counts`` None: unchanged)."""
    if counts is None:
        return total
    return {k: total.get(k, 0) + counts.get(k, 0) for k in STEERING_KEYS}


def rates(results: list[Result]) -> dict[tuple[str, str], dict[str, float]]:
    """(config, kind or 'all') -> share of each outcome, in percent."""
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for r in results:
        groups[(r.config, r.kind)].append(r)
        groups[(r.config, "all")].append(r)
    out = {}
    for key, group in groups.items():
        counts = Counter(r.outcome for r in group)
        out[key] = {o: 100 * counts[o] / len(group) for o in OUTCOMES}
        out[key]["static_valid"] = (
            100 * sum(not r.static_errors and r.outcome != "error" for r in group) / len(group)
        )
        out[key]["n"] = len(group)
    return out


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between the closest ranks
    (numpy's default), so a few requests still give a p90 between the two slowest."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(
    results: list[Result], names: list[str], base: str = BASELINE
) -> dict[str, dict[str, float]]:
    """Per configuration: latency percentiles (and their ratio to ``base`` when it ran),
    steering counts per explained completion, the share of the tasks' tests that passed,
    and the share of tasks whose completion ran a deprecated API (and its relative change
    from ``base``). NaN where undefined."""
    out: dict[str, dict[str, float]] = {}
    for name in names:
        group = [r for r in results if r.config == name]
        latencies = [ms for r in group for ms in r.latency_ms]
        totals: dict[str, float] = {}
        for r in group:
            totals = add_counts(totals, r.steering or None)
        explained = totals.get("completions", 0)
        row = {
            "tasks": len(group),
            "requests": len(latencies),
            "latency_median_ms": percentile(latencies, 50),
            "latency_p90_ms": percentile(latencies, 90),
            "explained": explained,
            "solved": _share(group, lambda r: r.outcome == "solved"),
            "tests_passed": tests_passed(group),
            "static_valid": _share(group, lambda r: not r.static_errors and r.outcome != "error"),
            "deprecated": _share(group, lambda r: bool(r.deprecated)),
            "named_deprecated": _share(group, lambda r: bool(r.named_deprecated)),
            **{code: float(api_errors(group, code)) for code in API_CODES},
        }
        for key in ("queries", "timeouts", "interrupts", "changed", "waited_ms", *CONTEXT_KEYS):
            row[f"{key}_per_completion"] = totals.get(key, 0) / explained if explained else math.nan
        out[name] = row
    base_row = out.get(base)
    for row in out.values():
        for key in ("latency_median_ms", "latency_p90_ms"):
            row[f"{key}_ratio"] = _ratio(row[key], base_row[key]) if base_row else math.nan
        for key in ("deprecated", "named_deprecated"):
            row[f"{key}_change"] = _ratio(row[key], base_row[key]) - 1 if base_row else math.nan
    return out


# pylint's messages for calls and attributes that do not exist: an unexpected keyword,
# a missing argument, an unknown member (issue 24's count, against unsteered).
API_CODES = ("E1123", "E1120", "E1101")


def api_errors(group: list[Result], code: str) -> int:
    """How many of pylint's ``code`` messages the group's completions got, in all."""
    return sum(1 for r in group for error in r.static_errors if f"[{code}" in error)


def tests_passed(group: list[Result]) -> float:
    """The share of the tasks' tests that passed, each task weighing the same (Hazel's
    Figure 8 measure); a task whose module did not even import passed none of its tests."""
    if not group:
        return math.nan
    per_task = [sum(r.tests.values()) / len(r.tests) if r.tests else 0.0 for r in group]
    return 100 * sum(per_task) / len(per_task)


def _share(group: list[Result], test: Any) -> float:
    return 100 * sum(bool(test(r)) for r in group) / len(group) if group else math.nan


def _ratio(value: float, base: float) -> float:
    return value / base if base and not math.isnan(base) else math.nan


def summary_lines(table: dict[str, dict[str, float]], base: str = BASELINE) -> list[str]:
    """Markdown tables: latency (to ``base``), steering per completion, deprecated-API use."""
    lines = [
        f"Latency per request, and its ratio to {base}:",
        "",
        f"| configuration | requests | median ms | p90 ms | median / {base} | p90 / {base} |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | {row['requests']:.0f} | {_num(row['latency_median_ms'], '.0f')} | "
            f"{_num(row['latency_p90_ms'], '.0f')} | "
            f"{_num(row['latency_median_ms_ratio'], '.2f', 'x')} | "
            f"{_num(row['latency_p90_ms_ratio'], '.2f', 'x')} |"
        )
    lines += [
        "",
        "Steering per completion (from steerlsp/explain):",
        "",
        "| configuration | completions | queries | timeouts | interrupts | tokens changed "
        "| prompt tokens | error rounds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | {row['explained']:.0f} | {_num(row['queries_per_completion'])} | "
            f"{_num(row['timeouts_per_completion'])} | "
            f"{_num(row['interrupts_per_completion'])} | {_num(row['changed_per_completion'])} | "
            f"{_num(row['prompt_tokens_per_completion'], '.0f')} | "
            f"{_num(row['rounds_per_completion'])} |"
        )
    lines += [
        "",
        "Deprecated-API use: tasks whose completion names a deprecated API (resolved",
        "statically by Jedi, read by steerlsp's deprecation reader), and tasks whose",
        "completion ran one at test time:",
        "",
        "| configuration | tasks | solved | tests passed | static-valid | names deprecated "
        f"| vs {base} | ran deprecated | vs {base} | E1123 | E1120 | E1101 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | {row['tasks']:.0f} | {_num(row['solved'], '.0f', '%')} | "
            f"{_num(row['tests_passed'], '.0f', '%')} | "
            f"{_num(row['static_valid'], '.0f', '%')} | "
            f"{_num(row['named_deprecated'], '.0f', '%')} | "
            f"{_change(row['named_deprecated_change'])} | "
            f"{_num(row['deprecated'], '.0f', '%')} | {_change(row['deprecated_change'])} | "
            + " | ".join(_num(row[code], ".0f") for code in API_CODES)
            + " |"
        )
    return lines


def _change(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:+.0f}%"


def _num(value: float, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if math.isnan(value) else f"{value:{spec}}{unit}"


def report(results: list[Result], names: list[str], base: str = BASELINE) -> str:
    """Markdown: per kind and configuration, the difference, and per-task changes."""
    table = rates(results)
    lines = [
        "| configuration | kind | n | solved | partial | not solved | error | static-valid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        for kind in (*KINDS, "all"):
            row = table.get((name, kind))
            if row:
                lines.append(
                    f"| {name} | {kind} | {row['n']:.0f} | {row['solved']:.0f}% | "
                    f"{row['partial']:.0f}% | {row['not_solved']:.0f}% | "
                    f"{row['error']:.0f}% | {row['static_valid']:.0f}% |"
                )
    if len(names) == 2:
        a, b = names
        lines += [
            "",
            f"Difference, {b} minus {a} (percentage points):",
            "",
            "| kind | solved | partial | not solved | error |",
            "|---|---|---|---|---|",
        ]
        for kind in (*KINDS, "all"):
            if (a, kind) in table and (b, kind) in table:
                d = {o: table[(b, kind)][o] - table[(a, kind)][o] for o in OUTCOMES}
                lines.append(
                    f"| {kind} | {d['solved']:+.0f} | {d['partial']:+.0f} | "
                    f"{d['not_solved']:+.0f} | {d['error']:+.0f} |"
                )
        by_task = defaultdict(dict)
        for r in results:
            by_task[r.task][r.config] = r.outcome
        changed = [
            f"- {t}: {o[a]} → {o[b]}"
            for t, o in sorted(by_task.items())
            if a in o and b in o and o[a] != o[b]
        ]
        lines += ["", "Tasks that changed:", "", *(changed or ["- none"])]
    latencies = sorted(ms for r in results for ms in r.latency_ms)
    if latencies:
        lines += [
            "",
            f"Median request latency {latencies[len(latencies) // 2]:.0f} ms over "
            f"{len(latencies)} requests.",
        ]
    lines += ["", *summary_lines(summary(results, names, base), base)]
    return "\n".join(lines) + "\n"


def plot(results: list[Result], names: list[str], path: Path) -> None:
    """Stacked bars of the four grades per configuration and kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = rates(results)
    labels = [f"{n}\n{k}" for n in names for k in (*KINDS, "all") if (n, k) in table]
    keys = [(n, k) for n in names for k in (*KINDS, "all") if (n, k) in table]
    colors = {
        "solved": "#2e7d32",
        "partial": "#f9a825",
        "not_solved": "#c62828",
        "error": "#616161",
    }
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(keys)), 4))
    bottom = [0.0] * len(keys)
    for outcome in OUTCOMES:
        values = [table[key][outcome] for key in keys]
        ax.bar(
            labels, values, bottom=bottom, label=outcome.replace("_", " "), color=colors[outcome]
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("% of tasks")
    ax.set_title("steerlsp evaluation tasks")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_summary(results: list[Result], names: list[str], path: Path, base: str = BASELINE) -> None:
    """Per configuration: solved / static-valid / deprecated rate; latency relative to ``base``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = summary(results, names, base)
    fig, (rates_ax, latency_ax) = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(names)), 4))
    width = 0.27
    positions = range(len(names))
    for i, (key, label, color) in enumerate(
        (
            ("solved", "solved", "#2e7d32"),
            ("static_valid", "static-valid", "#1565c0"),
            ("named_deprecated", "names a deprecated API", "#c62828"),
        )
    ):
        values = [_zero(table[n][key]) for n in names]
        rates_ax.bar(
            [x + (i - 1) * width for x in positions], values, width, label=label, color=color
        )
    rates_ax.set_xticks(list(positions), names, rotation=20)
    rates_ax.set_ylabel("% of tasks")
    rates_ax.set_ylim(0, 125)  # room for the legend above 100%
    rates_ax.set_title("outcomes")
    rates_ax.legend(fontsize=8, loc="upper center", ncol=3)
    relative = base in table
    for i, (key, label, color) in enumerate(
        (("latency_median_ms", "median", "#6a1b9a"), ("latency_p90_ms", "p90", "#ef6c00"))
    ):
        ratio = [table[n][f"{key}_ratio"] for n in names]
        plain = [table[n][key] / 1000 for n in names]
        values = [_zero(v) for v in (ratio if relative else plain)]
        latency_ax.bar(
            [x + (i - 0.5) * width for x in positions], values, width, label=label, color=color
        )
    if relative:
        latency_ax.axhline(1.0, color="#616161", linewidth=0.8, linestyle="--")
    latency_ax.set_xticks(list(positions), names, rotation=20)
    latency_ax.set_ylabel(f"latency / {base}" if relative else "latency (s)")
    latency_ax.set_title("request latency")
    latency_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def json_safe(value: Any) -> Any:
    """NaN (an undefined figure) as null, so the file is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value
