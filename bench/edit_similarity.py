"""Edit-similarity track (Codev-Bench style): complete real code with a piece removed.

Positions come from installed code (the stdlib and site-packages), chosen
deterministically with the AST: a statement, an ``if``/``for`` block, or a
function body is removed and the cursor put where it started; and, as a
control, the cursor is put at the end of a complete line where nothing is
missing. Each position is one ``textDocument/inlineCompletion`` through the
real steerlsp. Reported: exact match, edit similarity (difflib ratio), and
stop correctness (the completion ends where the ground truth ends; nothing is
produced where nothing was missing).

    python bench/edit_similarity.py --positions 60 --out bench/results
    [--settings '{"model": {"headPrecision": "bf16"}}' --name edit_similarity_bf16]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib
import json
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import lspbench
from bench.lspbench import LspClient

lspbench.TIMEOUT = 600.0
MODULES = (
    "textwrap",
    "shlex",
    "fnmatch",
    "json.decoder",
    "difflib",
    "calendar",
    "heapq",
    "string",
    "pylsp.workspace",
    "pygls.workspace.text_document",
    "configparser",
)
KINDS = ("statement", "block", "body", "nothing")
MAX_LINES = 8


@dataclass
class Position:
    kind: str
    module: str
    line: int  # 0-based line of the cursor
    text: str  # the document as opened (ground truth removed)
    cursor: int  # code-point offset of the cursor
    truth: str  # what was removed ("" for "nothing")


def positions(count: int, seed: int) -> list[Position]:
    """``count`` positions spread evenly over the kinds and modules."""
    pools: dict[str, list[Position]] = {kind: [] for kind in KINDS}
    for name in MODULES:
        source = Path(importlib.import_module(name).__file__ or "").read_text()
        for position in _candidates(name, source):
            pools[position.kind].append(position)
    rng = random.Random(seed)
    chosen: list[Position] = []
    for kind in KINDS:
        rng.shuffle(pools[kind])
        chosen += pools[kind][
            : count // len(KINDS) + (1 if KINDS.index(kind) < count % len(KINDS) else 0)
        ]
    return chosen


def _candidates(module: str, source: str) -> list[Position]:
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.body:
            body = node.body[1:] if _is_docstring(node.body[0]) else node.body
            if body and 2 <= body[-1].end_lineno - body[0].lineno + 1 <= MAX_LINES:  # type: ignore[operator]
                out.append(
                    _removed(module, "body", lines, offsets, body[0].lineno, body[-1].end_lineno)
                )
            for stmt in body:
                if (
                    isinstance(stmt, (ast.If, ast.For))
                    and stmt.end_lineno - stmt.lineno + 1 <= MAX_LINES
                ):  # type: ignore[operator]
                    out.append(
                        _removed(module, "block", lines, offsets, stmt.lineno, stmt.end_lineno)
                    )
                elif (
                    isinstance(stmt, (ast.Assign, ast.Return, ast.Expr))
                    and stmt.lineno == stmt.end_lineno
                    and not _is_docstring(stmt)
                ):
                    out.append(
                        _removed(module, "statement", lines, offsets, stmt.lineno, stmt.lineno)
                    )
                    end = offsets[stmt.lineno - 1] + len(lines[stmt.lineno - 1])
                    out.append(Position("nothing", module, stmt.lineno - 1, source, end, ""))
    return [p for p in out if p is not None]


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(getattr(node, "value", None), ast.Constant)
        and isinstance(node.value.value, str)
    )


def _removed(
    module: str, kind: str, lines: list[str], offsets: list[int], first: int, last: int | None
) -> Position:
    """Remove lines first..last (1-based), keeping the first line's indentation."""
    assert last is not None
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    start = offsets[first - 1] + indent
    end = offsets[last - 1] + len(lines[last - 1])
    source = "\n".join(lines)
    truth = source[start:end]
    return Position(kind, module, first - 1, source[:start] + source[end:], start, truth)


def similarity(completion: str, truth: str) -> float:
    """difflib ratio over the texts with trailing whitespace normalised."""
    norm = lambda s: "\n".join(line.rstrip() for line in s.strip("\n").split("\n"))  # noqa: E731
    return difflib.SequenceMatcher(None, norm(completion), norm(truth)).ratio()


def stop_correct(completion: str, truth: str) -> bool:
    """Ends where the truth ends (same line count), or is empty where nothing was missing."""
    if not truth:
        return not completion.strip()
    return bool(completion.strip()) and completion.strip("\n").count("\n") == truth.count("\n")


def run(count: int, seed: int, settings: dict | None = None) -> list[dict]:
    client = LspClient("steerlsp", [sys.executable, "-m", "steerlsp"])
    results = []
    try:
        client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": Path.cwd().as_uri(),
                "initializationOptions": settings or {},
                "capabilities": {
                    "general": {"positionEncodings": ["utf-32"]},
                    "textDocument": {"inlineCompletion": {}},
                },
            },
        )
        client.notify("initialized", {})
        while client.request("steerlsp/status", {})[0]["result"]["model"]["state"] != "ready":
            time.sleep(0.5)
        for n, position in enumerate(positions(count, seed)):
            uri = f"file:///edit-similarity/{n}/{position.module.replace('.', '_')}.py"
            client.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "python",
                        "version": 1,
                        "text": position.text,
                    }
                },
            )
            before = position.text[: position.cursor]
            line = before.count("\n")
            character = len(before) - (before.rfind("\n") + 1)  # utf-32 was negotiated
            reply, ms = client.request(
                "textDocument/inlineCompletion",
                {
                    "textDocument": {"uri": uri},
                    "position": {"line": line, "character": character},
                    "context": {"triggerKind": 1},
                },
            )
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            items = (reply.get("result") or {}).get("items") or []
            completion = items[0]["insertText"] if items else ""
            results.append(
                {
                    **asdict(position),
                    "text": None,
                    "completion": completion,
                    "ms": ms,
                    "exact": completion.strip() == position.truth.strip(),
                    "similarity": similarity(completion, position.truth)
                    if position.truth
                    else None,
                    "stop_correct": stop_correct(completion, position.truth),
                }
            )
            print(
                f"{position.kind:>9} {position.module:<32} sim="
                f"{results[-1]['similarity'] or 0:.2f} stop={results[-1]['stop_correct']}"
            )
    finally:
        client.close()
    return results


def summary(results: list[dict]) -> str:
    lines = [
        "| kind | n | exact match | edit similarity (mean) | stop correct | median latency |",
        "|---|---|---|---|---|---|",
    ]
    for kind in (*KINDS, "all"):
        group = [r for r in results if kind in ("all", r["kind"])]
        if not group:
            continue
        sims = [r["similarity"] for r in group if r["similarity"] is not None]
        sim = f"{statistics.mean(sims):.2f}" if sims else "—"
        lines.append(
            f"| {kind} | {len(group)} | {100 * statistics.mean(r['exact'] for r in group):.0f}% | "
            f"{sim} | {100 * statistics.mean(r['stop_correct'] for r in group):.0f}% | "
            f"{statistics.median(r['ms'] for r in group):.0f} ms |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--settings", type=json.loads, help="initializationOptions, as JSON")
    parser.add_argument("--name", default="edit_similarity", help="the result files' name")
    args = parser.parse_args()
    results = run(args.positions, args.seed, args.settings)
    args.out.mkdir(parents=True, exist_ok=True)
    table = summary(results)
    (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=1))
    (args.out / f"{args.name}.md").write_text(table)
    print("\n" + table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
