"""How often does a keystroke miss the model's KV prefix? Simulated typing in long files.

In long stdlib modules (over 1,500 lines), function bodies in the second half of
the file are removed and typed back one character at a time. Each keystroke is
a completion request: the text around the cursor is cut as the server cuts it
(``server/documents/cursor.py``), and the prompt is built by ``Completer.prepare`` with
the default 1024-token prefix budget, for the same document, in order. The
engine keeps the previous prompt's KV cache, so a keystroke must prefill the
tokens after the longest prefix it shares with the previous prompt.

A keystroke **misses** when it must prefill more than half of its prompt (the
window's first line moved: a cold prefill, about 0.7-2 s on two cores, instead
of a few tokens). Compared in one run: the prompt window as it was (the
earliest line that fits) and the anchored window (``prompts/builder.py``
``anchored_tail``). No model runs: only the tokenizer.

Writes OUT/prefix_reuse.json and OUT/prefix_reuse.png; prints a Markdown table.

Run: PYTHONPATH=. .venv/bin/python bench/prefix_reuse.py --out bench/results
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from steerlsp.models.decoding.completer import Completer, load_completer
from steerlsp.models.loading.load import LoadRequest
from steerlsp.models.options import CompletionOptions, CompletionRequest, Document
from steerlsp.prompts.builder import MAX_CHARS_PER_TOKEN
from steerlsp.prompts.window import WindowAnchors
from steerlsp.server.documents.cursor import text_around

MODULES = ("argparse", "inspect", "tarfile", "subprocess", "typing", "pydoc")
MIN_LINES = 1500


class NoAnchors:
    """The window as it was: every prompt starts at the earliest line that fits."""

    def offset(self, document: str | None, prefix: str, cursor_line: int) -> int | None:
        return None

    def remember(self, document: str | None, prefix: str, cursor_line: int, start: int) -> None:
        pass


def bodies(source: str, count: int, rng: random.Random) -> list[tuple[int, int]]:
    """(first, last) 1-based lines of ``count`` function bodies in the file's second half."""
    half = source.count("\n") // 2
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.lineno > half:
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.lineno
            if 4 <= last - first <= 25:
                found.append((first, last))
    return rng.sample(sorted(found), min(count, len(found)))


def keystrokes(source: str, first: int, last: int) -> list[tuple[str, int, int]]:
    """(document, cursor line, cursor column) after each character of the body typed back."""
    lines = [line + "\n" for line in source.split("\n")]
    body = "".join(lines[first - 1 : last])
    before, after = "".join(lines[: first - 1]), "".join(lines[last:])[:-1]
    out = []
    for n in range(1, len(body) + 1):
        typed = body[:n]
        line = before.count("\n") + typed.count("\n")
        column = len(typed) - (typed.rfind("\n") + 1)
        out.append((before + typed + after, line, column))
    return out


def simulate(completer: Completer, typing: list[tuple[str, int, int]], name: str) -> list[dict]:
    options = CompletionOptions()
    previous: list[int] = []
    records = []
    for document, line, column in typing:
        parts = document.split("\n")  # LSP lines (the stdlib has no "\r")
        lines = [part + "\n" for part in parts[:-1]] + [parts[-1]]
        around = text_around(
            lines,
            line,
            column,
            "utf-32",
            before=options.prefix_tokens * MAX_CHARS_PER_TOKEN,
            after=options.suffix_tokens * MAX_CHARS_PER_TOKEN,
        )
        assert around is not None
        where = Document(tuple(lines), line, column)
        request = CompletionRequest(around.prefix, around.suffix, name, where)
        ids = completer.prepare(request, options).ids
        shared = 0
        limit = min(len(previous), len(ids) - 1)
        while shared < limit and previous[shared] == ids[shared]:
            shared += 1
        records.append({"prompt": len(ids), "prefill": len(ids) - shared})
        previous = ids
    return records


def run(per_module: int, seed: int) -> dict[str, Any]:
    completer = load_completer(LoadRequest())
    rng = random.Random(seed)
    results: dict[str, list[dict]] = {"earliest line (before)": [], "anchored (now)": []}
    for module in MODULES:
        source = Path(importlib.import_module(module).__file__ or "").read_text()
        if source.count("\n") < MIN_LINES:
            continue
        for first, last in bodies(source, per_module, rng):
            typing = keystrokes(source, first, last)
            name = f"{module}:{first}"
            for label, anchors in (
                ("earliest line (before)", NoAnchors()),
                ("anchored (now)", WindowAnchors()),
            ):
                completer.windows = anchors  # type: ignore[assignment]
                records = simulate(completer, typing, name)
                for r in records:
                    r["body"] = name
                results[label] += records[1:]  # the first keystroke is cold in both
            print(f"{name}: {len(typing)} keystrokes", flush=True)
    return results


def summarize(results: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    out = {}
    for label, records in results.items():
        misses = [r for r in records if r["prefill"] > r["prompt"] / 2]
        prefill = [r["prefill"] for r in records]
        out[label] = {
            "keystrokes": len(records),
            "miss_rate": len(misses) / len(records),
            "prefill_p50": statistics.median(prefill),
            "prefill_p90": float(np.percentile(prefill, 90)),
            "prefill_mean": statistics.mean(prefill),
            "prompt_p50": statistics.median(r["prompt"] for r in records),
        }
    return out


def table(s: dict[str, dict[str, float]]) -> str:
    lines = [
        "| prompt window | keystrokes | miss the KV prefix | tokens to prefill p50 / p90 / mean "
        "| prompt tokens p50 |",
        "|---|---|---|---|---|",
    ]
    for label, r in s.items():
        lines.append(
            f"| {label} | {r['keystrokes']} | {r['miss_rate']:.2%} | "
            f"{r['prefill_p50']:.0f} / {r['prefill_p90']:.0f} / {r['prefill_mean']:.0f} | "
            f"{r['prompt_p50']:.0f} |"
        )
    return "\n".join(lines)


def plot(results: dict[str, list[dict]], s: dict[str, dict[str, float]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, records in results.items():
        values = np.sort([r["prefill"] for r in records])
        share = np.arange(1, len(values) + 1) / len(values)
        ax.step(values, share, where="post", label=f"{label}: {s[label]['miss_rate']:.1%} miss")
    ax.set(
        xscale="symlog",
        xlabel="tokens to prefill at a keystroke",
        ylabel="share of keystrokes",
        title="typing in long files: KV prefix reuse",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--per-module", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    results = run(args.per_module, args.seed)
    s = summarize(results)
    print(table(s))
    args.out.mkdir(parents=True, exist_ok=True)
    plot(results, s, args.out / "prefix_reuse.png")
    report = {"summary": s, "records": results, "args": vars(args) | {"out": str(args.out)}}
    (args.out / "prefix_reuse.json").write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
