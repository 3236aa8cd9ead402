"""The next-identifier benchmark's pure parts: positions, groups, the split, the report.

bench/next_identifier.py measures, after a ``.``, whether the model writes the
name the code really uses, under each configuration of :data:`CONFIGS`; what
does not need the model or the analysis instance lives here: finding attribute
sites, grouping and splitting positions, the stdlib's common names, the
configurations, the summary and the Markdown report.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import re
import statistics
import sysconfig
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from steerlsp.models.deprecation.static import DeprecationCache
from steerlsp.models.options import SteeringOptions
from tests.helpers.evaltasks import Task, deprecated_definition

# The configurations compared, side by side at each position. Add rows here.
T = TypeVar("T")

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
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
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


def library_files(site_packages: Path, library: str, rng: Any) -> Iterator[tuple[Path, str, str]]:
    """A library's source files in a seeded order, tests left out: (path, its
    site-packages-relative name, its text), unreadable ones skipped."""
    files = sorted(
        p
        for p in (site_packages / library).rglob("*.py")
        if not SKIPPED_DIRS & set(p.relative_to(site_packages).parts[:-1])
    )
    rng.shuffle(files)
    for file in files:
        try:
            source = file.read_text(encoding="utf-8")
        except (ValueError, UnicodeDecodeError, OSError):
            continue
        yield file, file.relative_to(site_packages).as_posix(), source


def interleaved(streams: list[Iterator[T]], count: int) -> list[T]:
    """The first ``count`` items taken from each stream in turn, a finished stream
    dropped: a longer sample starts with a shorter one."""
    streams = list(streams)
    chosen: list[T] = []
    while streams and len(chosen) < count:
        for stream in list(streams):
            item = next(stream, None)
            if item is None:
                streams.remove(stream)
                continue
            chosen.append(item)
            if len(chosen) == count:
                break
    return chosen


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
