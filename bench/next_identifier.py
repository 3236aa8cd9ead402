"""Next-identifier accuracy: after a ``.``, does the model write the name the code really uses?

Positions are every attribute access in the reference solutions of
``bench/tasks`` (the cursor right after the ``.``, the task's prompt and the
solution up to there before it) and a seeded sample of attribute accesses in
the libraries installed in the task venvs (the file up to the ``.`` before it,
the rest of the file after the name). Each position is completed under every
configuration of :data:`CONFIGS` in turn, so the KV cache of its prompt is
shared, and the identifier written first is compared with the real one. The
oracle asks the analysis instance once, with a generous timeout, whether the
real name is among its completion items at all: steering cannot pick a name
that is not offered.

Groups: positions of changed-API and uncommon-API tasks, and third-party
positions whose name is not among the stdlib's most frequent attribute names,
are "uncommon/changed"; task and third-party positions with a frequent name
are "common"; repo-local positions with an infrequent name are "local".
Positions are split 50/50 by a hash of their id: tuning reads ``train``, the
report reads ``test``.

    python bench/next_identifier.py --out bench/results
    python bench/next_identifier.py --configs unsteered,ranked --limit 10 --split all
    python bench/next_identifier.py --split train --weights rank_relevance=6 --configs ranked

Writes ``next_identifier.json`` (rows and summary), ``next_identifier.md`` and
``next_identifier.png``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import hashlib
import json
import random
import re
import statistics
import sys
import sysconfig
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from steerlsp.models.deprecation.static import DeprecationCache
from steerlsp.models.options import CompletionOptions, SteeringOptions
from tests.helpers.evaltasks import Task, deprecated_definition, load_tasks, venv_for

# The configurations compared, side by side at each position. Add rows here.
CONFIGS: dict[str, SteeringOptions] = {
    "unsteered": SteeringOptions(enabled=False),
    "mask": SteeringOptions(rank=False, mode="mask", deprecation=False, hints=False),
    "walk": SteeringOptions(rank=False, mode="boost", deprecation=False, hints=False),
    "ranked": SteeringOptions(),
    "ranked-no-deprecation": SteeringOptions(deprecation=False),
    "ranked-usage": SteeringOptions(rank_usage=2.0),  # the document-usage signal on
    "ranked-hints": SteeringOptions(hints=True),  # with signature and deprecation hints
}
BASELINE = "unsteered"
MAX_NEW_TOKENS = 8  # an identifier and a little after it
ORACLE_TIMEOUT = 5.0  # seconds: the oracle asks what the server knows, not what it answers in time
THIRD_PARTY = 400  # sampled before the split, so each half has about 200
LIBRARIES = ("pydantic", "marshmallow", "attr", "sqlalchemy", "pandas", "numpy")
SITES_PER_FILE = 3  # spread the sample over many files
COMMON_TOP = 300
SKIPPED_DIRS = frozenset({"tests", "test", "idle_test", "site-packages", "dist-packages"})
GROUPS = ("uncommon/changed", "common", "local", "all")
RESULTS = Path(__file__).resolve().parent / "results"
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Site:
    """One attribute access in a source text: offsets are code points."""

    dot: int  # index of the ``.``
    end: int  # index just past the name
    name: str
    receiver: str  # "self" (self./cls. chains), "chain" (names and attributes), "other"


@dataclass(frozen=True)
class Position:
    """One cursor right after a ``.``; ``prefix + suffix`` is the document without the name."""

    id: str  # stable: task id or site-packages-relative path, and an offset
    source: str  # "task" | "third-party"
    kind: str  # "changed" | "uncommon" | "local" | "third-party"
    origin: str  # the task id or the library
    prefix: str
    suffix: str
    truth: str
    root: str  # the analysis instance's workspace root
    python: str  # the interpreter Jedi resolves imports with
    document: str  # the file path the analysis sees
    path: str  # the path in the prompt header


# -- positions (pure) ---------------------------------------------------------------------------


def attribute_sites(source: str, start: int = 0) -> list[Site]:
    """Attribute accesses whose ``.`` is at or after ``start``, in source order.

    Skipped: attributes of number literals, a name not right after its ``.``
    (``x .\\n  y``), and anything whose position does not read back as its name
    (attributes inside f-strings on Python < 3.12).
    """
    tree = ast.parse(source)
    lines = _line_starts(source)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.end_lineno is None:
            continue
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, int | float | complex):
            continue
        end = _offset(source, lines, node.end_lineno, node.end_col_offset or 0)
        dot = end - len(node.attr) - 1
        if dot < start or source[dot] != "." or source[dot + 1 : end] != node.attr:
            continue
        sites.append(Site(dot, end, node.attr, _receiver(value)))
    return sorted(sites, key=lambda s: s.dot)


def _line_starts(source: str) -> list[int]:
    return [0] + [m.end() for m in NEWLINE.finditer(source)]


def _offset(source: str, lines: list[int], lineno: int, col: int) -> int:
    """The code-point offset of an AST (1-based line, UTF-8 byte column) position."""
    begin = lines[lineno - 1]
    line = source[begin : begin + col]
    if line.isascii():
        return begin + col
    whole = source[begin : lines[lineno]] if lineno < len(lines) else source[begin:]
    return begin + len(whole.encode()[:col].decode(errors="ignore"))


def _receiver(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Name):
        return "self" if node.id in ("self", "cls") else "chain"
    return "other"


def split_of(position_id: str) -> str:
    """``train`` or ``test``, 50/50 by a hash of the id (stable across runs and samples)."""
    return "train" if hashlib.sha256(position_id.encode()).digest()[0] % 2 == 0 else "test"


def group_of(kind: str, common: bool) -> str:
    """The report's group: changed and uncommon tasks count as uncommon whatever the name."""
    if kind in ("changed", "uncommon"):
        return "uncommon/changed"
    if common:
        return "common"
    return "local" if kind == "local" else "uncommon/changed"


def written_identifier(generated: str) -> str:
    """The identifier the generation starts with; "" when it starts with anything else."""
    found = IDENTIFIER.match(generated)
    return found.group() if found else ""


def task_kind(task_id: str) -> str:
    return task_id.split("-", 1)[0]


def task_positions(task: Task, python: str) -> list[Position]:
    """Every attribute access of the task's solution, completed after the prompt."""
    prompt = task.prompt
    text = prompt + task.solution
    return [
        Position(
            id=f"{task.id}:{site.dot - len(prompt)}",
            source="task",
            kind=task_kind(task.id),
            origin=task.id,
            prefix=text[: site.dot + 1],
            suffix="\n",
            truth=site.name,
            root=str(task.path),
            python=python,
            document=str(task.path / "prompt.py"),
            path="prompt.py",
        )
        for site in attribute_sites(text, start=len(prompt))
    ]


def library_sites(source: str, seed: str) -> tuple[list[Site], int]:
    """The sampleable sites of one file, and how many private names were skipped.

    Receivers are names or attribute chains (a call's result is not what an
    editor user types after most often); half the ``self.`` sites are dropped,
    by a hash of ``seed`` and the offset, so the sample is not mostly self-attributes.
    """
    sites, private = [], 0
    for site in attribute_sites(source):
        if site.receiver == "other":
            continue
        if site.name.startswith("_"):
            private += 1
            continue
        if site.receiver == "self" and split_of(f"self:{seed}:{site.dot}") == "train":
            continue
        sites.append(site)
    return sites, private


def third_party_positions(
    site_packages: Path, python: str, count: int, seed: int
) -> tuple[list[Position], int]:
    """``count`` positions, taken round-robin over :data:`LIBRARIES` (a longer sample
    starts with a shorter one), and the private names skipped on the way."""
    streams = [
        _library_stream(site_packages, lib, python, random.Random(f"{seed}:{lib}"))
        for lib in LIBRARIES
        if (site_packages / lib).is_dir()
    ]
    chosen: list[Position] = []
    skipped = 0
    while streams and len(chosen) < count:
        for stream in list(streams):
            item = next(stream, None)
            if item is None:
                streams.remove(stream)
                continue
            position, private = item
            skipped += private
            chosen.append(position)
            if len(chosen) == count:
                break
    return chosen, skipped


def _library_stream(
    site_packages: Path, library: str, python: str, rng: random.Random
) -> Iterator[tuple[Position, int]]:
    files = sorted(
        p
        for p in (site_packages / library).rglob("*.py")
        if not SKIPPED_DIRS & set(p.relative_to(site_packages).parts[:-1])
    )
    rng.shuffle(files)
    for file in files:
        relative = file.relative_to(site_packages).as_posix()
        try:
            source = file.read_text(encoding="utf-8")
            sites, private = library_sites(source, relative)
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue
        picked = rng.sample(sites, min(SITES_PER_FILE, len(sites)))
        for n, site in enumerate(sorted(picked, key=lambda s: s.dot)):
            yield (
                Position(
                    id=f"{relative}:{site.dot}",
                    source="third-party",
                    kind="third-party",
                    origin=library,
                    prefix=source[: site.dot + 1],
                    suffix=source[site.end :] or "\n",
                    truth=site.name,
                    root=str(site_packages),
                    python=python,
                    document=str(file),
                    path=relative,
                ),
                private if n == 0 else 0,
            )


def round_robin(lists: list[list[Position]]) -> list[Position]:
    """The first of each list, then the second of each...: a short ``--limit`` still
    spreads over many tasks."""
    longest = max((len(items) for items in lists), default=0)
    return [items[i] for i in range(longest) for items in lists if i < len(items)]


def select(positions: list[Position], split: str, limit: int | None) -> list[Position]:
    kept = [p for p in positions if split == "all" or split_of(p.id) == split]
    return kept[:limit] if limit is not None else kept


# -- common attribute names ---------------------------------------------------------------------


def count_attributes(sources: Iterable[str]) -> Counter[str]:
    """How often each attribute name is accessed in these sources (unparsable ones skipped)."""
    counts: Counter[str] = Counter()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        counts.update(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    return counts


def top_names(counts: Counter[str], top: int = COMMON_TOP) -> frozenset[str]:
    """The ``top`` most frequent names (ties broken by name, so the set is stable)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return frozenset(name for name, _ in ranked[:top])


def common_attributes(cache: Path = RESULTS / "common_attributes.json") -> frozenset[str]:
    """The stdlib's most frequent attribute names (tests excluded), counted once and cached."""
    if cache.exists():
        return frozenset(json.loads(cache.read_text())["names"])
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = (
        p
        for p in sorted(stdlib.rglob("*.py"))
        if not SKIPPED_DIRS & set(p.relative_to(stdlib).parts[:-1])
    )
    counts = count_attributes(p.read_text(encoding="utf-8", errors="replace") for p in files)
    names = top_names(counts)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(
        json.dumps(
            {
                "stdlib": str(stdlib),
                "top": COMMON_TOP,
                "names": sorted(names),
                "counts": {n: counts[n] for n in sorted(names, key=lambda n: -counts[n])},
            },
            indent=1,
        )
    )
    return names


# -- configurations -----------------------------------------------------------------------------


def parse_weights(text: str) -> dict[str, Any]:
    """``key=value,...`` of :class:`SteeringOptions` fields, typed like their defaults."""
    defaults = SteeringOptions()
    weights: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not hasattr(defaults, key):
            raise ValueError(f"not a SteeringOptions field=value: {item!r}")
        kind = type(getattr(defaults, key))
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"{key} takes true or false, got {value!r}")
            weights[key] = value.lower() in ("true", "1")
        else:
            weights[key] = kind(value)
    return weights


def configurations(names: list[str], weights: dict[str, Any]) -> dict[str, SteeringOptions]:
    """The named configurations; ``weights`` apply to those that rank."""
    missing = [n for n in names if n not in CONFIGS]
    if missing:
        raise ValueError(f"unknown configurations {missing}; known: {', '.join(CONFIGS)}")
    chosen = {}
    for name in names:
        options = CONFIGS[name]
        if options.enabled and options.rank and weights:
            options = dataclasses.replace(options, **weights)
        chosen[name] = options
    return chosen


# -- the run (side effects) ---------------------------------------------------------------------


@dataclass
class Row:
    id: str
    source: str
    kind: str
    origin: str
    truth: str
    common: bool
    group: str
    split: str
    oracle: dict[str, Any] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


def measure(
    positions: list[Position],
    configs: dict[str, SteeringOptions],
    common: frozenset[str],
    log: Any = sys.stderr,
    traces: bool = False,
) -> list[Row]:
    """Complete every position under every configuration (loads the model)."""
    from bench.analysis_host import AnalysisHost
    from steerlsp.models.decoding.completer import load_completer
    from steerlsp.models.loading.load import LoadRequest

    completer = load_completer(LoadRequest())  # as the server loads it
    rows: list[Row] = []
    groups: dict[tuple[str, str], list[Position]] = defaultdict(list)
    for position in positions:
        groups[(position.root, position.python)].append(position)
    for (root, python), members in groups.items():
        host = AnalysisHost(Path(root), python)
        try:
            host.warm(Path(members[0].document))
            for position in members:
                started = time.perf_counter()
                rows.append(_measure_one(completer, host, position, configs, common, traces))
                print(
                    f"{len(rows)}/{len(positions)} {position.id} {position.truth!r}: "
                    + " ".join(f"{c}={r['written']!r}" for c, r in rows[-1].results.items())
                    + f" ({time.perf_counter() - started:.1f}s)",
                    file=log,
                    flush=True,
                )
        finally:
            host.close()
    return rows


def _measure_one(
    completer: Any,
    host: Any,
    position: Position,
    configs: dict[str, SteeringOptions],
    common: frozenset[str],
    traces: bool = False,
) -> Row:
    from steerlsp.models.decoding.worker import CancelToken
    from steerlsp.models.options import CompletionRequest

    is_common = position.truth in common
    row = Row(
        position.id,
        position.source,
        position.kind,
        position.origin,
        position.truth,
        is_common,
        group_of(position.kind, is_common),
        split_of(position.id),
    )
    document = Path(position.document)
    row.oracle = _oracle(host, document, position)
    request = CompletionRequest(position.prefix, position.suffix, position.path)
    # Prefill once, unmeasured, so no configuration pays for the shared prompt.
    completer.complete(request, CompletionOptions(max_new_tokens=1), CancelToken())
    for name, steering in configs.items():
        options = CompletionOptions(max_new_tokens=MAX_NEW_TOKENS, steering=steering)
        started = time.perf_counter()
        try:
            completion = completer.complete(
                request, options, CancelToken(), analysis=host.document(document)
            )
        except Exception as exc:  # a failing configuration is counted, not fatal to the run
            row.results[name] = _failed(exc, time.perf_counter() - started)
            continue
        latency = time.perf_counter() - started
        written = written_identifier(completion.generation.text)
        trace = completion.trace or {}
        queries = trace.get("queries", [])
        row.results[name] = {
            "written": written,
            "correct": written == position.truth,
            "latency_ms": round(latency * 1000, 1),
            "queries": len(queries),
            "timeouts": sum(1 for q in queries if q.get("outcome") != "ok"),
            "interrupts": len(trace.get("interrupts", [])),
            "changed": len(trace.get("changed", [])),
            "errors": 0,
            "reused_tokens": completion.generation.reused_tokens,
            "prefill_ms": round(completion.generation.prefill_seconds * 1000, 1),
            "decode_ms": round(completion.generation.decode_seconds * 1000, 1),
            # The ranking at the cursor's dot, with each score's parts: bench/tune_rank.py
            # re-ranks these offline under other weights.
            "ranking": next((r for r in trace.get("rankings", []) if r.get("offset") == 0), None),
        }
        if traces:  # the whole explain trace, to read why a position went wrong
            row.results[name]["trace"] = trace
    written = {r["written"] for r in row.results.values() if r.get("written")}
    deprecated = deprecated_names(position, written)
    for result in row.results.values():
        result["deprecated"] = result.get("written", "") in deprecated
    return row


def deprecated_names(position: Position, names: set[str]) -> set[str]:
    """Which of ``names``, written right after the position's ``.``, name a deprecated
    API: Jedi (with the position's interpreter) resolves the attribute, and a
    definition counts when steerlsp's static reader (``models/deprecation/static.py``: PEP
    702, warnings in the body, docstrings) finds it deprecated at its line. Nothing
    is imported or run."""
    import jedi

    found: set[str] = set()
    environment = _environment(position.python)
    for name in sorted(names):
        code = position.prefix + name + position.suffix
        line = position.prefix.count("\n") + 1
        column = len(position.prefix) - (position.prefix.rfind("\n") + 1) + len(name) - 1
        try:
            script = jedi.Script(code, path=position.document, environment=environment)
            definitions = script.goto(line, column, follow_imports=True)
        except Exception:  # Jedi's own failures: the name is not counted
            continue
        if any(deprecated_definition(d, _DEPRECATIONS) for d in definitions):
            found.add(name)
    return found


@functools.cache
def _environment(python: str) -> Any:
    import jedi

    return jedi.create_environment(python, safe=False)


_DEPRECATIONS = DeprecationCache()


def _oracle(host: Any, document: Path, position: Position) -> dict[str, Any]:
    """Whether the analysis offers the real name at all, asked with a generous timeout
    and once more on a timeout (a first question about a big library can take that
    long). It also warms Jedi for this position, so every configuration after it
    meets the same warm server."""
    from steerlsp.models.steering.analysis import AnalysisError, AnalysisTimeout

    text, offset = position.prefix + position.suffix, len(position.prefix)
    started = time.perf_counter()
    error = ""
    for _ in range(2):
        try:
            items = host.document(document).completions_at(text, offset, timeout=ORACLE_TIMEOUT)
        except AnalysisTimeout as exc:
            error = str(exc)
            continue
        except AnalysisError as exc:
            error = str(exc)
            break
        names = [item.name for item in items]
        return {
            "in_list": position.truth in names,
            "count": len(names),
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
    return {"in_list": False, "count": 0, "error": error[:200]}


def _failed(exc: Exception, seconds: float) -> dict[str, Any]:
    return {
        "written": "",
        "correct": False,
        "latency_ms": round(seconds * 1000, 1),
        "queries": 0,
        "timeouts": 0,
        "interrupts": 0,
        "changed": 0,
        "errors": 1,
        "error": f"{type(exc).__name__}: {exc}"[:300],
    }


# -- the report (pure) --------------------------------------------------------------------------


def _in_group(row: Row, group: str) -> bool:
    return group == "all" or row.group == group


def summarize(rows: list[Row], names: list[str]) -> dict[str, Any]:
    """Accuracy per configuration and group, the oracle, latency and steering counts."""
    summary: dict[str, Any] = {"positions": len(rows), "oracle": {}, "configs": {}}
    for group in GROUPS:
        members = [r for r in rows if _in_group(r, group)]
        hits = sum(r.oracle.get("in_list", False) for r in members)
        summary["oracle"][group] = _rate(hits, len(members))
    baseline = _median_latency(rows, BASELINE) if BASELINE in names else None
    for name in names:
        done = [r for r in rows if name in r.results]
        entry: dict[str, Any] = {
            group: _rate(
                sum(r.results[name]["correct"] for r in done if _in_group(r, group)),
                sum(1 for r in done if _in_group(r, group)),
            )
            for group in GROUPS
        }
        offered = [r for r in done if r.oracle.get("in_list")]
        entry["in_list"] = _rate(sum(r.results[name]["correct"] for r in offered), len(offered))
        median = _median_latency(rows, name)
        entry["median_latency_ms"] = median
        entry["latency_ratio"] = round(median / baseline, 2) if median and baseline else None
        for key in ("queries", "timeouts", "interrupts", "changed", "errors", "deprecated"):
            entry[key] = sum(r.results[name].get(key, 0) for r in done)
        summary["configs"][name] = entry
    summary["kinds"] = {
        kind: {
            "positions": sum(1 for r in rows if r.kind == kind),
            "oracle": _rate(
                sum(r.oracle.get("in_list", False) for r in rows if r.kind == kind),
                sum(1 for r in rows if r.kind == kind),
            ),
            **{
                name: _rate(
                    sum(r.results[name]["correct"] for r in rows if r.kind == kind),
                    sum(1 for r in rows if r.kind == kind),
                )
                for name in names
            },
        }
        for kind in sorted({r.kind for r in rows})
    }
    return summary


def _rate(hits: int, total: int) -> dict[str, Any]:
    return {"correct": hits, "n": total, "rate": round(hits / total, 3) if total else None}


def _median_latency(rows: list[Row], name: str) -> float | None:
    values = [r.results[name]["latency_ms"] for r in rows if name in r.results]
    return round(statistics.median(values), 1) if values else None


def _cell(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "-"
    return f"{rate['rate']:.0%} ({rate['correct']}/{rate['n']})"


def report(summary: dict[str, Any], names: list[str], meta: dict[str, Any]) -> str:
    """The Markdown report: configurations by group, the oracle row, and kinds."""
    lines = [
        "# Next-identifier accuracy",
        "",
        f"Split `{meta['split']}`, {summary['positions']} positions "
        f"({meta['task_positions']} from task solutions, {meta['third_party_positions']} "
        f"third-party; {meta['private_skipped']} private names skipped in the files sampled). "
        f"Model output: the identifier written right after the `.`, {MAX_NEW_TOKENS} tokens. "
        "*in list*: accuracy where the analysis offers the real name. *deprecated written*: "
        "positions where the name written resolves (Jedi) to a definition steerlsp's static "
        "reader finds deprecated.",
        "",
        "| config | " + " | ".join(GROUPS) + " | in list | median ms | vs unsteered | "
        "queries | timeouts | interrupts | errors | deprecated written |",
        "|---" * (len(GROUPS) + 9) + "|",
    ]
    for name in names:
        entry = summary["configs"][name]
        ratio = entry["latency_ratio"]
        lines.append(
            f"| {name} | "
            + " | ".join(_cell(entry[g]) for g in GROUPS)
            + f" | {_cell(entry['in_list'])} | {entry['median_latency_ms']} | "
            + f"{ratio if ratio is not None else '-'} | {entry['queries']} | "
            + f"{entry['timeouts']} | {entry['interrupts']} | {entry['errors']} | "
            + f"{entry['deprecated']} |"
        )
    oracle = summary["oracle"]
    lines.append(
        "| oracle (name in list) | "
        + " | ".join(_cell(oracle[g]) for g in GROUPS)
        + " |"
        + " |" * 8
    )
    lines += ["", "By kind:", "", "| kind | oracle | " + " | ".join(names) + " |"]
    lines.append("|---" * (len(names) + 2) + "|")
    for kind, entry in summary["kinds"].items():
        lines.append(
            f"| {kind} ({entry['positions']}) | {_cell(entry['oracle'])} | "
            + " | ".join(_cell(entry[n]) for n in names)
            + " |"
        )
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], names: list[str], path: Path) -> None:
    """Grouped bars: accuracy per group for each configuration, and the oracle."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {n: summary["configs"][n] for n in names} | {"oracle": summary["oracle"]}
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(GROUPS), 4))
    for i, (name, entry) in enumerate(series.items()):
        values = [(entry[g]["rate"] or 0.0) for g in GROUPS]
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(GROUPS))]
        ax.bar(xs, values, width, label=name, hatch="//" if name == "oracle" else None)
    ax.set_xticks(range(len(GROUPS)))
    ax.set_xticklabels([f"{g}\n(n={summary['oracle'][g]['n']})" for g in GROUPS])
    ax.set_ylim(0, 1)
    ax.set_ylabel("identifier right after '.'")
    ax.set_title("Next-identifier accuracy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- entry point --------------------------------------------------------------------------------


def python_for(requirements: str) -> str:
    """The task venv's python; a task without pins needs only the stdlib, so the base one."""
    if requirements:
        return str(venv_for(requirements))
    return str(Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}")


def gather(
    split: str, limit: int | None, third_party: int, seed: int
) -> tuple[list[Position], list[Position], int]:
    """Task and third-party positions of the split (``limit`` per source)."""
    per_task: list[list[Position]] = []
    pythons: dict[str, str] = {}
    for task in load_tasks():
        if task_kind(task.id) not in ("changed", "uncommon", "local"):
            continue
        python = pythons.setdefault(task.requirements, python_for(task.requirements))
        per_task.append(task_positions(task, python))
    tasks = round_robin(per_task)
    library: list[Position] = []
    skipped = 0
    for python in sorted({p for r, p in pythons.items() if r}):
        site_packages = next(Path(python).parent.parent.glob("lib/python*/site-packages"))
        sample, private = third_party_positions(site_packages, python, third_party, seed)
        library += sample
        skipped += private
    return select(tasks, split, limit), select(library, split, limit), skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names")
    parser.add_argument("--split", choices=("train", "test", "all"), default="test")
    parser.add_argument("--limit", type=int, default=None, help="positions per source")
    parser.add_argument("--third-party", type=int, default=THIRD_PARTY, help="sampled per venv")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weights", default="", help="SteeringOptions overrides: key=value,...")
    parser.add_argument("--only", default="", help="positions whose id contains this")
    parser.add_argument("--traces", action="store_true", help="keep each explain trace")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    configs = configurations(names, parse_weights(args.weights))
    common = common_attributes()
    tasks, library, skipped = gather(args.split, args.limit, args.third_party, args.seed)
    positions = [p for p in tasks + library if args.only in p.id]
    started = time.perf_counter()
    rows = measure(positions, configs, common, traces=args.traces)
    elapsed = time.perf_counter() - started
    summary = summarize(rows, names)
    meta = {
        "split": args.split,
        "limit": args.limit,
        "seed": args.seed,
        "configs": {n: dataclasses.asdict(o) for n, o in configs.items()},
        "task_positions": len(tasks),
        "third_party_positions": len(library),
        "private_skipped": skipped,
        "seconds": round(elapsed, 1),
        "seconds_per_position": round(elapsed / len(rows), 2) if rows else None,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "next_identifier.json").write_text(
        json.dumps(
            {"meta": meta, "summary": summary, "rows": [dataclasses.asdict(r) for r in rows]},
            indent=1,
        )
    )
    markdown = report(summary, names, meta)
    (args.out / "next_identifier.md").write_text(markdown)
    plot(summary, names, args.out / "next_identifier.png")
    print(markdown)
    print(f"{elapsed:.0f}s, {meta['seconds_per_position']}s per position")
    return 0


if __name__ == "__main__":
    sys.exit(main())
