"""Scoring candidate names whole: one row as a token tree against a batch.

The ranker scores its shortlist (6 names) by the model's log-probability of each
whole name after the cursor's ``.`` (``Scorer.score_continuations``). The batch
runs the names as rows, each on its own copy of the KV cache; the token tree
runs every name's tokens in one row after the cache, with attention masks that
keep each name to the prefix and itself. Both, taking turns, at the first
attribute access of each task's reference solution (``bench/tasks``), the
prompt being the task's prompt and the solution up to that ``.``, and the names
six identifiers of that solution. Also: how far each path's scores are from a
pass without a cache over prompt + name (bf16 layers round differently per
shape, so neither is exact).

Writes OUT/score_names.json and OUT/score_names.png (``score_names_N`` with
``--context N``); prints a Markdown table. The batch copies the cache once per
name, so its cost grows with the prompt: ``--context 800`` puts 800 tokens of
stdlib code above each prompt, as a longer file would.

Run: PYTHONPATH=. .venv/bin/python bench/score_names.py --out bench/results
     PYTHONPATH=. .venv/bin/python bench/score_names.py --context 800 --out bench/results
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.scoring import whole_logprob

TASKS = Path(__file__).resolve().parent / "tasks"
NAMES = 6
_ATTRIBUTE = re.compile(r"\b[A-Za-z_]\w*\.(?=[A-Za-z_])")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w{2,}\b")


def positions(limit: int) -> list[tuple[str, str, list[str]]]:
    """(task, prompt text ending at a ``.``, candidate names) per task."""
    found = []
    for task in sorted(p for p in TASKS.iterdir() if (p / "solution.py").is_file()):
        prompt = (task / "prompt.py").read_text()
        solution = (task / "solution.py").read_text()
        body = solution[len(prompt) :] if solution.startswith(prompt) else solution
        match = _ATTRIBUTE.search(body)
        if match is None:
            continue
        names = list(dict.fromkeys(_IDENTIFIER.findall(solution)))[:NAMES]
        if len(names) == NAMES:
            found.append((task.name, prompt + body[: match.end()], names))
    return found[:limit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--context",
        type=int,
        default=0,
        help="put this many tokens of stdlib code (textwrap.py) above each prompt, as a "
        "longer file would (the server's window holds up to 1024)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)

    import torch

    from steerlsp.models.decoding.completer import load_completer
    from steerlsp.models.loading.load import LoadRequest

    completer = load_completer(LoadRequest())
    engine, tokenizer = completer.engine, completer.tokenizer
    ends = completer.vocabulary.index.identifier_break_mask
    rows: list[dict[str, Any]] = []
    above = _context(tokenizer, args.context)
    for task, text, names in positions(args.positions):
        ids = tokenizer.encode(above + text)
        sequences = [tokenizer.encode(n, add_special_tokens=False) for n in names]
        times: dict[str, list[float]] = {"batch": [], "tree": []}
        scores: dict[str, list[float]] = {}
        with torch.inference_mode():
            engine.reset()
            logits = engine.prefill(ids)
            for _ in range(args.repeats):
                for path in ("batch", "tree"):
                    engine.scorer._tree = path == "tree"
                    started = time.perf_counter()
                    scores[path] = engine.scorer.score_continuations(logits, sequences, ends)
                    times[path].append(time.perf_counter() - started)
            reference = [whole_logprob(completer.loaded.model, ids, s, ends) for s in sequences]
        rows.append(
            {
                "task": task,
                "prompt_tokens": len(ids),
                "name_tokens": sum(len(s) for s in sequences),
                **{f"{p}_ms": statistics.median(t) * 1000 for p, t in times.items()},
                **{
                    f"{p}_error": max(abs(a - b) for a, b in zip(s, reference, strict=True))
                    for p, s in scores.items()
                },
                "same_best": max(range(NAMES), key=scores["batch"].__getitem__)
                == max(range(NAMES), key=scores["tree"].__getitem__),
            }
        )
        print(
            f"{task:45s} {len(ids):5d} tokens  batch {rows[-1]['batch_ms']:6.1f} ms"
            f"  tree {rows[-1]['tree_ms']:6.1f} ms",
            flush=True,
        )
    summary = {
        "positions": len(rows),
        "batch_ms_median": statistics.median(r["batch_ms"] for r in rows),
        "tree_ms_median": statistics.median(r["tree_ms"] for r in rows),
        "speedup_median": statistics.median(r["batch_ms"] / r["tree_ms"] for r in rows),
        "batch_error_max": max(r["batch_error"] for r in rows),
        "tree_error_max": max(r["tree_error"] for r in rows),
        "same_best": sum(r["same_best"] for r in rows),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    name = "score_names" if not args.context else f"score_names_{args.context}"
    (args.out / f"{name}.json").write_text(json.dumps({"summary": summary, "rows": rows}))
    _plot(rows, args.out / f"{name}.png")
    print()
    print("| path | median ms | max \\|error\\| vs a pass without a cache |")
    print("|---|---|---|")
    print(f"| batch | {summary['batch_ms_median']:.1f} | {summary['batch_error_max']:.3f} |")
    print(f"| token tree | {summary['tree_ms_median']:.1f} | {summary['tree_error_max']:.3f} |")
    print(
        f"\nspeedup (median of per-position ratios): {summary['speedup_median']:.2f}x; "
        f"same best name at {summary['same_best']}/{len(rows)} positions"
    )
    return 0


def _context(tokenizer: Any, tokens: int) -> str:
    """The last ``tokens`` tokens (about) of textwrap.py's source, ending in a newline."""
    if tokens <= 0:
        return ""
    import textwrap

    source = Path(textwrap.__file__).read_text()
    ids = tokenizer.encode(source, add_special_tokens=False)[-tokens:]
    text = tokenizer.decode(ids)
    return text[text.find("\n") + 1 :] + "\n\n"


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    tokens = [r["prompt_tokens"] for r in rows]
    ax.scatter(tokens, [r["batch_ms"] for r in rows], label="batch (a cache copy per name)")
    ax.scatter(tokens, [r["tree_ms"] for r in rows], label="token tree (one row)")
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("ms to score 6 names (median)")
    ax.set_title("Scoring the ranker's shortlist whole")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
