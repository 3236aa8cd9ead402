"""Tune the ranker's weights offline, on the train split of the next-identifier benchmark.

``bench/next_identifier.py`` records, for each position, the ranking at the
cursor's dot with every score's parts (model log-probability, relevance,
metadata penalties, expected-type bonus). Re-ranking those parts under other
weights shows which weights would have put the right name first, without
running the model again. Only rankings whose candidates include the truth
count (the others no weight can fix).

    python bench/next_identifier.py --split train --configs ranked --out bench/results/train
    python bench/tune_rank.py bench/results/train/next_identifier.json

The weights found are the defaults of ``SteeringOptions``; the figures in
docs/evaluation.md come from the test split, which tuning never reads.

``--ceiling`` reads any split and tunes on it in sample, to say how far these
signals can go at all: the best weights for the test split itself bound what any
weights tuned elsewhere could reach there. Its figures are never defaults.

    python bench/tune_rank.py --ceiling bench/results/test/next_identifier.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CONFIG = "ranked"
GRID = {
    "logprob": [0.2, 0.3, 0.4, 0.5, 0.7, 1.0],
    "relevance": [1.0, 2.0, 3.0, 4.0, 6.0],
    "expected": [0.0, 1.0, 2.0, 3.0, 5.0],
    "usage": [0.0, 0.5, 1.0, 2.0, 3.0, 4.0],
}


def rankings(rows: Iterable[dict[str, Any]], config: str = CONFIG) -> list[tuple[str, list[dict]]]:
    """(truth, the ranking's candidates) for every row whose ranking lists the truth."""
    return [
        (row.get("truth") or row["position"]["truth"], row["results"][config]["ranking"]["top"])
        for row in rows
        if _lists_truth(row, config)
    ]


def right_elsewhere(rows: Iterable[dict[str, Any]], config: str = CONFIG) -> int:
    """Positions written right whose ranking does not list the truth (or that had none):
    the walk, a typed prefix or the model alone; re-weighting leaves them as they are."""
    listed = {id(row) for row in rows if _lists_truth(row, config)}
    return sum(
        1
        for row in rows
        if id(row) not in listed and (row.get("results", {}).get(config) or {}).get("correct")
    )


def _lists_truth(row: dict[str, Any], config: str) -> bool:
    ranking = (row.get("results", {}).get(config) or {}).get("ranking")
    truth = row.get("truth") or row.get("position", {}).get("truth")
    return bool(ranking and truth and any(c["name"] == truth for c in ranking.get("top", [])))


def first(
    candidates: list[dict], logprob: float, relevance: float, expected: float, usage: float = 0.0
) -> str:
    """The name ranked first under these weights (metadata penalties as recorded)."""

    def score(c: dict) -> float:
        bonus = expected if c.get("expected") else 0.0
        used = usage * c.get("usage", 0.0)
        return logprob * c["logprob"] + relevance * c["relevance"] + c["metadata"] + bonus + used

    return max(candidates, key=score)["name"]


def accuracy(cases: list[tuple[str, list[dict]]], weights: tuple[float, ...]) -> float:
    if not cases:
        return 0.0
    return sum(first(c, *weights) == truth for truth, c in cases) / len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="next_identifier.json of a train-split run")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="tune in sample on any split: the most these signals reach there (not defaults)",
    )
    args = parser.parse_args(argv)
    data = json.loads(args.results.read_text())
    rows = data.get("rows", [])
    if not args.ceiling and any(row.get("split", "train") != "train" for row in rows):
        print("refusing to tune on rows outside the train split", file=sys.stderr)
        return 2
    cases = rankings(rows)
    print(f"{len(cases)} rankings list the right name, of {len(rows)} positions")
    if args.ceiling:
        grid = itertools.product(*GRID.values())
        best = max(sum(first(c, *w) == t for t, c in cases) for w in grid)
        kept = right_elsewhere(rows)
        total = best + kept
        print(
            f"ceiling: {total} of {len(rows)} positions ({total / max(len(rows), 1):.1%}): "
            f"{best} re-ranked with the best weights for these very rows, and {kept} right "
            "where no ranking listed the name (no weight changes those)"
        )
    results = sorted(
        ((accuracy(cases, w), w) for w in itertools.product(*GRID.values())),
        key=lambda r: -r[0],
    )
    for rate, (lp, rel, exp, use) in results[:10]:
        print(f"{rate:6.1%}  logprob={lp} relevance={rel} expected_type={exp} usage={use}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
