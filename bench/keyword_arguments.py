"""The keyword-argument track of ``bench/next_identifier.py``: in a call, does the model
write a keyword the callee takes, and the one the code really uses?

Positions are keyword arguments (``f(a, name=...)``) in calls in the libraries
of the task venvs (the same seeded, per-library sample as the attribute track,
and the same 50/50 split by id): the cursor where the keyword's name starts,
the file up to there before it, and the rest of the file after the call's last
line after it (the model writes ``name=value)`` as a user's completion would).
Each position is completed under each configuration; the keyword written
(``name=`` at the start of the completion) is compared with the real one and
with the callee's parameters, read from the analysis instance's signature help
with the steering stage's own reading (``shape_of``). Only positions whose
callee's signature is known and takes no ``**kwargs`` are *checkable*: the
rest are counted, not scored.

    python bench/next_identifier.py --track keywords --limit 60
    python bench/keyword_arguments.py --split test --configs unsteered,ranked

Writes ``keyword_arguments.json``, ``keyword_arguments.md`` and ``keyword_arguments.png``.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.next_identifier import (
    CONFIGS,
    LIBRARIES,
    RESULTS,
    SITES_PER_FILE,
    _line_starts,
    _offset,
    configurations,
    interleaved,
    library_files,
    split_of,
)

DEFAULT_CONFIGS = "unsteered,ranked"
SAMPLE = 240  # sampled before the split
MAX_NEW_TOKENS = 8
SIGNATURE_TIMEOUT = 10.0
KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")


@dataclass(frozen=True)
class KeywordSite:
    start: int  # where the keyword's name starts (code points)
    name: str
    line_end: int  # the end of the call's last line: the suffix starts here


@dataclass(frozen=True)
class KeywordPosition:
    id: str
    origin: str  # the library
    prefix: str
    suffix: str
    truth: str
    root: str
    python: str
    document: str
    path: str


@dataclass
class KeywordRow:
    id: str
    origin: str
    truth: str
    split: str
    callee: dict[str, Any] = field(default_factory=dict)  # checkable, open, keywords
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


# -- positions (pure) ---------------------------------------------------------------------------


def keyword_sites(source: str) -> list[KeywordSite]:
    """Keyword arguments of calls, in source order, where the name reads back at its
    position and follows ``(`` or ``,`` (a user's cursor at an argument's start)."""
    tree = ast.parse(source)
    lines = _line_starts(source)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.end_lineno is None:
            continue
        end_line = node.end_lineno
        line_end = lines[end_line] - 1 if end_line < len(lines) else len(source)
        for keyword in node.keywords:
            if keyword.arg is None:  # **kwargs passed on
                continue
            start = _offset(source, lines, keyword.lineno, keyword.col_offset)
            if source[start : start + len(keyword.arg)] != keyword.arg:
                continue
            before = source[:start].rstrip()
            if not before.endswith(("(", ",")):
                continue
            sites.append(KeywordSite(start, keyword.arg, line_end))
    return sorted(sites, key=lambda s: s.start)


def written_keyword(generated: str) -> str:
    """The keyword the completion starts with (``name=``); "" when it starts otherwise."""
    found = KEYWORD.match(generated)
    return found.group(1) if found else ""


def verdict(written: str, truth: str, keywords: list[str]) -> str:
    """``right``, ``parameter`` (another the callee takes), ``not a parameter``, or
    ``no keyword`` (a positional value, or nothing)."""
    if not written:
        return "no keyword"
    if written == truth:
        return "right"
    return "parameter" if written in keywords else "not a parameter"


def summarize(rows: list[KeywordRow], names: list[str]) -> dict[str, Any]:
    checkable = [r for r in rows if r.callee.get("checkable")]
    out: dict[str, Any] = {
        "positions": len(rows),
        "checkable": len(checkable),
        "open": sum(1 for r in rows if r.callee.get("open")),
        "unknown": sum(1 for r in rows if not r.callee.get("known")),
        # Known and closed, yet without the keyword the code uses: a signature read wrong
        # (another overload, a wrapper) or code the checker would call wrong; not scored.
        "mismatch": sum(
            1
            for r in rows
            if r.callee.get("known") and not r.callee.get("open") and not r.callee.get("checkable")
        ),
        "configs": {},
    }
    for name in names:
        verdicts = [r.results[name]["verdict"] for r in checkable if name in r.results]
        written = [v for v in verdicts if v != "no keyword"]
        latencies = [r.results[name]["latency_ms"] for r in rows if name in r.results]
        out["configs"][name] = {
            "right": verdicts.count("right"),
            "parameter": verdicts.count("parameter"),
            "not_a_parameter": verdicts.count("not a parameter"),
            "no_keyword": verdicts.count("no keyword"),
            "written": len(written),
            "valid_share": _share(
                verdicts.count("right") + verdicts.count("parameter"), len(written)
            ),
            "right_share": _share(verdicts.count("right"), len(verdicts)),
            "interrupts": sum(
                r.results[name].get("interrupts", 0) for r in checkable if name in r.results
            ),
            "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        }
    return out


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def report(summary: dict[str, Any], names: list[str], meta: dict[str, Any]) -> str:
    lines = [
        "# Keyword arguments",
        "",
        f"{summary['positions']} keyword arguments in calls in third-party libraries "
        f"({meta['split']} split, seed {meta['seed']}); {summary['checkable']} checkable "
        f"(the callee's signature known, no `**kwargs`), {summary['open']} with "
        f"`**kwargs`, {summary['unknown']} with no signature, {summary['mismatch']} whose "
        f"signature lacks the keyword the code uses. Completions of "
        f"{MAX_NEW_TOKENS} tokens from where the keyword's name starts. Took "
        f"{meta['seconds']:.0f} s.",
        "",
        "| config | right | another parameter | not a parameter | no keyword "
        "| keyword written is a parameter | right keyword | interrupts | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        c = summary["configs"][name]
        lines.append(
            f"| {name} | {c['right']} | {c['parameter']} | {c['not_a_parameter']} "
            f"| {c['no_keyword']} | {_percent(c['valid_share'])} ({c['right'] + c['parameter']}"
            f"/{c['written']}) | {_percent(c['right_share'])} ({c['right']}/"
            f"{summary['checkable']}) | {c['interrupts']} | {c['p50_ms']} |"
        )
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], names: list[str], path: Path) -> None:
    """Stacked bars per configuration: what the keyword written was, checkable positions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = (
        ("right", "right", "#2e7d32"),
        ("parameter", "another parameter", "#81c784"),
        ("not_a_parameter", "not a parameter", "#c62828"),
        ("no_keyword", "no keyword", "#bdbdbd"),
    )
    fig, ax = plt.subplots(figsize=(2 + 1.5 * len(names), 4))
    bottoms = [0.0] * len(names)
    for key, label, color in parts:
        values = [summary["configs"][n][key] for n in names]
        ax.bar(names, values, bottom=bottoms, label=label, color=color)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    ax.set_ylabel(f"checkable keyword positions (of {summary['checkable']})")
    ax.set_title("Keyword arguments: what was written")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


# -- the sample and the run (side effects) ------------------------------------------------------


def keyword_positions(
    site_packages: Path, python: str, count: int, seed: int
) -> list[KeywordPosition]:
    """``count`` positions, round-robin over :data:`LIBRARIES`."""
    streams = [
        _stream(site_packages, lib, python, random.Random(f"{seed}:{lib}:keywords"))
        for lib in LIBRARIES
        if (site_packages / lib).is_dir()
    ]
    return interleaved(streams, count)


def _stream(
    site_packages: Path, library: str, python: str, rng: random.Random
) -> Iterator[KeywordPosition]:
    for file, relative, source in library_files(site_packages, library, rng):
        try:
            sites = keyword_sites(source)
        except (SyntaxError, ValueError):
            continue
        for site in sorted(
            rng.sample(sites, min(SITES_PER_FILE, len(sites))), key=lambda s: s.start
        ):
            yield KeywordPosition(
                id=f"{relative}:kw{site.start}",
                origin=library,
                prefix=source[: site.start],
                suffix=source[site.line_end :] or "\n",
                truth=site.name,
                root=str(site_packages),
                python=python,
                document=str(file),
                path=relative,
            )


def gather(split: str, limit: int | None, sample: int, seed: int) -> list[KeywordPosition]:
    from bench.next_identifier import python_for
    from tests.helpers.evaltasks import load_tasks
    from tests.helpers.next_identifier import task_kind

    tasks = [t for t in load_tasks() if task_kind(t.id) in ("changed", "uncommon", "local")]
    pythons = sorted({python_for(t.requirements) for t in tasks if t.requirements})
    positions: list[KeywordPosition] = []
    for python in pythons:
        site_packages = next(Path(python).parent.parent.glob("lib/python*/site-packages"))
        positions += keyword_positions(site_packages, python, sample, seed)
    kept = [p for p in positions if split == "all" or split_of(p.id) == split]
    return kept[:limit] if limit is not None else kept


def measure(positions: list[KeywordPosition], configs: dict[str, Any]) -> list[KeywordRow]:
    from bench.analysis_host import AnalysisHost
    from steerlsp.models.decoding.completer import load_completer
    from steerlsp.models.loading.load import LoadRequest

    completer = load_completer(LoadRequest())
    rows: list[KeywordRow] = []
    roots = sorted({(p.root, p.python) for p in positions})
    for root, python in roots:
        members = [p for p in positions if (p.root, p.python) == (root, python)]
        host = AnalysisHost(Path(root), python)
        try:
            host.warm(Path(members[0].document))
            for position in members:
                started = time.perf_counter()
                rows.append(_measure_one(completer, host, position, configs))
                results = rows[-1].results
                print(
                    f"{len(rows)}/{len(positions)} {position.id} {position.truth!r}: "
                    + " ".join(f"{c}={r['written']!r}/{r['verdict']}" for c, r in results.items())
                    + f" ({time.perf_counter() - started:.1f}s)",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            host.close()
    return rows


def _callee(host: Any, position: KeywordPosition) -> dict[str, Any]:
    """What the steering stage would know of the callee: its signature's shape."""
    from steerlsp.models.steering.analysis import AnalysisError, Signature
    from steerlsp.models.steering.monitor import MonitorState
    from steerlsp.models.steering.stages.keywords import shape_of
    from steerlsp.models.steering.stages.written import steering_window

    call = MonitorState().update(steering_window(position.prefix)).call
    if call is None:
        return {"known": False}
    text = position.prefix + position.suffix
    try:
        signature = host.document(Path(position.document)).signature_at(
            text, len(position.prefix), timeout=SIGNATURE_TIMEOUT
        )
    except AnalysisError:
        signature = None
    shape = shape_of(signature, call.callee) if isinstance(signature, Signature) else None
    if shape is None:
        return {"known": False, "callee": call.callee}
    keywords = shape.keywords()
    return {
        "known": True,
        "callee": call.callee,
        "open": shape.open,
        "checkable": not shape.open and position.truth in keywords,
        "keywords": keywords,
    }


def _measure_one(
    completer: Any, host: Any, position: KeywordPosition, configs: dict[str, Any]
) -> KeywordRow:
    from steerlsp.models.decoding.worker import CancelToken
    from steerlsp.models.options import CompletionOptions, CompletionRequest

    row = KeywordRow(position.id, position.origin, position.truth, split_of(position.id))
    row.callee = _callee(host, position)
    request = CompletionRequest(position.prefix, position.suffix, position.path)
    completer.complete(request, CompletionOptions(max_new_tokens=1), CancelToken())
    keywords = row.callee.get("keywords", [])
    for name, steering in configs.items():
        options = CompletionOptions(max_new_tokens=MAX_NEW_TOKENS, steering=steering)
        started = time.perf_counter()
        try:
            completion = completer.complete(
                request, options, CancelToken(), analysis=host.document(Path(position.document))
            )
        except Exception as exc:  # counted, not fatal to the run
            row.results[name] = {"written": "", "verdict": "error", "error": str(exc)[:300]}
            continue
        written = written_keyword(completion.generation.text)
        trace = completion.trace or {}
        row.results[name] = {
            "written": written,
            "text": completion.generation.text,
            "verdict": verdict(written, position.truth, keywords)
            if row.callee.get("checkable")
            else "unchecked",
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "interrupts": sum(
                1 for i in trace.get("interrupts", []) if "keyword" in i.get("reason", "")
            ),
        }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default=DEFAULT_CONFIGS, help=", ".join(CONFIGS))
    parser.add_argument("--split", choices=("train", "test", "all"), default="test")
    parser.add_argument("--limit", type=int, default=None, help="positions")
    parser.add_argument("--sample", type=int, default=SAMPLE, help="sampled before the split")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    configs = configurations(names, {})
    positions = gather(args.split, args.limit, args.sample, args.seed)
    started = time.perf_counter()
    rows = measure(positions, configs)
    meta = {"split": args.split, "seed": args.seed, "seconds": time.perf_counter() - started}
    summary = summarize(rows, names)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "keyword_arguments.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "rows": [r.__dict__ for r in rows]}, indent=1)
    )
    markdown = report(summary, names, meta)
    (args.out / "keyword_arguments.md").write_text(markdown)
    plot(summary, names, args.out / "keyword_arguments.png")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
