"""Latency of the private analysis instance's ``completions_at`` at ``obj.`` positions.

At every attribute access (``name.attr``) in the files of a project (default
the example project), the speculative text is the file with the
attribute's name removed and the offset right after the ``.``: the moment the
decode loop asks. Each round uses a new document version with a comment line
of its own at the top (answers are cached per text up to the offset), so no
answer comes from the cache, and every question but the first per file is a
ranged didChange plus a completion request. The first round (Jedi's caches cold) is
a warm-up and not counted. ``--no-resolve`` leaves the items' documentation
unresolved (then every candidate's first doc line is empty).

Prints the median, p90 and mean in ms, the items per answer and the
instance's RSS; ``--json PATH`` writes every sample.

Run: .venv/bin/python bench/analysis_latency.py [--rounds 5] [--project DIR] [--no-resolve]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path

from steerlsp.server.analysis import instance as analysis
from steerlsp.server.analysis.instance import AnalysisInstance

ROOT = Path(__file__).resolve().parent.parent
ATTRIBUTE = re.compile(r"\b[A-Za-z_]\w*\.([A-Za-z_]\w*)")


def positions(text: str) -> list[tuple[str, int]]:
    """(speculative text, offset) at every ``name.attr`` outside comments, attribute removed."""
    found = []
    for match in ATTRIBUTE.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if "#" in text[line_start : match.start()]:
            continue
        dot = match.start(1)
        found.append((text[:dot] + text[match.end(1) :], dot))
    return found


def measure(instance: AnalysisInstance, project: Path, rounds: int) -> dict[str, Any]:
    """Ask at every position, ``rounds`` times; the first round is a warm-up."""
    samples: list[float] = []
    counts: list[int] = []
    files = sorted(project.rglob("*.py"))
    for round_ in range(rounds + 1):
        for path in files:
            doc = instance.document(from_fs_path(str(path)) or "", round_)
            for text, offset in positions(path.read_text(encoding="utf-8")):
                # A line of its own per round: answers are cached per text up to the offset.
                head = f"# round {round_}\n"
                started = time.perf_counter()
                found = doc.completions_at(head + text, len(head) + offset, timeout=30.0)
                if round_:
                    samples.append((time.perf_counter() - started) * 1000)
                    counts.append(len(found))
    return {
        "samples_ms": samples,
        "median_ms": statistics.median(samples),
        "p90_ms": statistics.quantiles(samples, n=10)[-1],
        "mean_ms": statistics.fmean(samples),
        "items_median": statistics.median(counts),
        "status": instance.status(),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    project = Path(args.project).resolve()
    if not args.resolve:
        analysis.RESOLVE_AT_MOST = 0
    instance = AnalysisInstance(
        asyncio.get_running_loop(), root_uri=lambda: from_fs_path(str(project))
    )
    try:
        return await asyncio.to_thread(measure, instance, project, args.rounds)
    finally:
        await instance.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default=str(ROOT / "steerlsp" / "example" / "project"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-resolve", dest="resolve", action="store_false")
    parser.add_argument("--json", help="write every sample here")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(
        f"completions_at (resolve={args.resolve}): {len(result['samples_ms'])} questions, "
        f"median {result['median_ms']:.1f} ms, p90 {result['p90_ms']:.1f} ms, "
        f"mean {result['mean_ms']:.1f} ms, {result['items_median']:.0f} items (median), "
        f"RSS {result['status']['rss_mb']} MiB"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
