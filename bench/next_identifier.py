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
    python bench/next_identifier.py --track keywords --limit 60   # keyword arguments

Writes ``next_identifier.json`` (rows and summary), ``next_identifier.md`` and
``next_identifier.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from steerlsp.models.options import CompletionOptions, SteeringOptions
from tests.helpers.evaltasks import load_tasks, venv_for
from tests.helpers.next_identifier import (
    CONFIGS,
    GROUPS,
    LIBRARIES,
    MAX_NEW_TOKENS,
    ORACLE_TIMEOUT,
    RESULTS,
    SITES_PER_FILE,
    THIRD_PARTY,
    Position,
    Row,
    common_attributes,
    configurations,
    deprecated_names,
    group_of,
    interleaved,
    library_files,
    library_sites,
    parse_weights,
    report,
    round_robin,
    select,
    split_of,
    summarize,
    task_kind,
    task_positions,
    written_identifier,
)


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
    taken = interleaved(streams, count)
    return [position for position, _ in taken], sum(private for _, private in taken)


def _library_stream(
    site_packages: Path, library: str, python: str, rng: random.Random
) -> Iterator[tuple[Position, int]]:
    for file, relative, source in library_files(site_packages, library, rng):
        try:
            sites, private = library_sites(source, relative)
        except (SyntaxError, ValueError):
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
    track = argparse.ArgumentParser(add_help=False)
    track.add_argument("--track", choices=("names", "keywords"), default="names")
    chosen, rest = track.parse_known_args(argv)
    if chosen.track == "keywords":  # keyword arguments in calls: bench/keyword_arguments.py
        from bench import keyword_arguments

        return keyword_arguments.main(rest)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--track", choices=("names", "keywords"), default="names")
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
