"""How far steering could take the embedded model on the task suite: the reference
solutions, teacher-forced.

Each task's prompt (``# path: prompt.py`` and ``prompt.py``, as steerlsp builds a
prompt for a prefix-only model) is followed by its reference body (``solution.py``)
and the embedded model (fp32, the reference for greedy agreement) reads both in one
forward pass. At every token of the body it is asked what greedy decoding would
write next, given the reference so far. Where that is not the reference's token the
model diverges, and a completion can only be the reference if something overrides
the model there. Each divergence is classed by where its token starts in the body:

- **member**: an identifier right after a ``.``: the trie walk and the ranker choose
  among the analysis's items there;
- **keyword**: an argument's ``name=`` in a call: the keyword stage's ground;
- **import**: a name the prompt imports and does not use yet (``statistics``): the
  unused-import stage's bonus (``models/steering/stages/imports.py``);
- **name**: any other identifier (a variable, a builtin, a parameter): steering knows
  the names in scope but not which one the task needs;
- **literal**: inside a string or number literal: the text the tests check;
- **structure**: operators, brackets, keywords, newlines and indentation: the
  approach;
- **comment**: inside a comment, harmless, not counted;
- **layout**: both tokens only whitespace (``\n`` against ``\n\n\n`` where the body
  ends), harmless, not counted.

A divergence is *firm* when greedy decoding prefers its own token by more than
``--gap`` nats: no ranking signal short of certainty would flip it. Steering's
information covers member and keyword positions; a body with firm divergences
elsewhere is one the model does not write whatever steering does, unless another
correct body exists that the model would write (the suite's tests accept any that
behaves right). The report counts the bodies steering could reach: every firm
divergence a member, keyword or import one. That is generous: steering must also
choose right at those, and at every divergence that is not firm.

    python bench/teacher_forcing.py --out bench/results

Writes ``teacher_forcing.md``, ``teacher_forcing.json`` and ``teacher_forcing.png``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tokenize
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from steerlsp.models.loading.load import LoadRequest, load
from steerlsp.models.steering.stages.imports import unused_imports
from steerlsp.prompts.builder import path_comment
from tests.helpers.evaltasks import Task, load_tasks

CLASSES = ("member", "keyword", "import", "name", "literal", "structure", "comment", "layout")
STEERABLE = ("member", "keyword", "import")
COUNTED = ("member", "keyword", "import", "name", "literal", "structure")


def char_classes(prompt: str, body: str) -> list[str]:
    """The class of every character of ``body`` (see the module's docstring), read
    from Python's tokenizer over the whole module."""
    unused = set(unused_imports(prompt))
    source = prompt + body
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    classes = ["structure"] * len(source)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    depth = 0
    for i, tok in enumerate(tokens):
        begin = starts[tok.start[0] - 1] + tok.start[1]
        end = starts[tok.end[0] - 1] + tok.end[1]
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth = max(0, depth - 1)
        kind = _kind(tok, tokens[i - 1] if i else None, tokens[i + 1 : i + 3], depth)
        if kind == "name" and tok.string in unused:
            kind = "import"
        for offset in range(begin, min(end, len(source))):
            classes[offset] = kind
    return classes[len(prompt) :]


def _kind(tok: Any, before: Any, after: list[Any], depth: int) -> str:
    if tok.type == tokenize.COMMENT:
        return "comment"
    if tok.type in (tokenize.STRING, tokenize.NUMBER) or tok.type in _FSTRING:
        return "literal"
    if tok.type != tokenize.NAME or tok.string in _KEYWORDS:
        return "structure"
    if before is not None and before.string == ".":
        return "member"
    if depth and after and after[0].string == "=" and before is not None and before.string in "(,":
        return "keyword"
    return "name"


_FSTRING = {
    getattr(tokenize, n)
    for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
    if hasattr(tokenize, n)
}
_KEYWORDS = set(__import__("keyword").kwlist)


def force(model: Any, tokenizer: Any, prompt: str, body: str, gap: float) -> dict[str, Any]:
    """Teacher-force ``body`` after ``prompt``: every divergence, classed."""
    prompt_ids = tokenizer(prompt, add_special_tokens=True)["input_ids"]
    body_ids = tokenizer(body, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + body_ids])
    with torch.inference_mode():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    classes = char_classes(prompt, body)
    divergences = []
    offset = 0
    for i, ref in enumerate(body_ids):
        piece = tokenizer.decode([ref])
        start = offset
        offset += len(piece)
        best = int(logprobs[i].argmax())
        if best == ref:
            continue
        # A token of leading spaces classes by the first character that is not one.
        at = start
        while at < min(offset, len(classes)) - 1 and body[at] in " \t":
            at += 1
        kind = classes[at] if at < len(classes) else "structure"
        said = tokenizer.decode([best])
        if not piece.strip() and not said.strip():
            kind = "layout"
        margin = float(logprobs[i, best] - logprobs[i, ref])
        divergences.append(
            {
                "at": start,
                "reference": piece,
                "model": said,
                "class": kind,
                "gap": round(margin, 2),
                "firm": margin > gap,
                "rank": int((logprobs[i] > logprobs[i, ref]).sum()),
            }
        )
    if offset != len(body):
        raise RuntimeError(f"the body's tokens decode to {offset} characters, not {len(body)}")
    return {"tokens": len(body_ids), "divergences": divergences}


def summarise(task: Task, forced: dict[str, Any]) -> dict[str, Any]:
    counts = Counter(d["class"] for d in forced["divergences"] if d["class"] in COUNTED)
    firm = Counter(d["class"] for d in forced["divergences"] if d["firm"] and d["class"] in COUNTED)
    beyond = sum(n for kind, n in firm.items() if kind not in STEERABLE)
    return {
        "task": task.id,
        "kind": task.kind,
        "tokens": forced["tokens"],
        "divergences": dict(counts),
        "firm": dict(firm),
        "firm_beyond_steering": beyond,
        "reachable": beyond == 0,
        "first": next((d for d in forced["divergences"] if d["class"] in COUNTED), None),
    }


def report(rows: list[dict[str, Any]], gap: float) -> str:
    n = len(rows)
    reachable = [r for r in rows if r["reachable"]]
    totals = Counter()
    firm = Counter()
    for r in rows:
        totals.update(r["divergences"])
        firm.update(r["firm"])
    tokens = sum(r["tokens"] for r in rows)
    lines = [
        "# The reference solutions, teacher-forced",
        "",
        f"{n} tasks, {tokens} body tokens. A divergence: greedy decoding, given the "
        f"reference so far, would write another token; firm: by more than {gap} nats.",
        "",
        "| class | divergences | firm | share of firm |",
        "|---|---|---|---|",
    ]
    all_firm = sum(firm.values()) or 1
    for kind in COUNTED:
        lines.append(f"| {kind} | {totals[kind]} | {firm[kind]} | {firm[kind] / all_firm:.0%} |")
    beyond = sorted(r["firm_beyond_steering"] for r in rows)
    lines += [
        "",
        f"Bodies with no firm divergence outside member, keyword and import positions (the "
        f"most steering could reach): **{len(reachable)} of {n}**"
        + (f" ({', '.join(r['task'] for r in reachable)})" if reachable else "")
        + ".",
        f"Firm divergences outside steering's ground, per body: median {beyond[n // 2]}, "
        f"fewest {beyond[0]}, most {beyond[-1]}.",
        "",
        "| task | body tokens | divergences | firm (member / keyword / import / other) "
        "| first divergence |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        f = r["firm"]
        first = r["first"]
        said = (
            f"{first['class']}: `{first['model']!r}` for `{first['reference']!r}`"
            if first
            else "none"
        )
        lines.append(
            f"| {r['task']} | {r['tokens']} | {sum(r['divergences'].values())} | "
            f"{f.get('member', 0)} / {f.get('keyword', 0)} / {f.get('import', 0)} / "
            f"{r['firm_beyond_steering']} | {said} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 6))
    names = [r["task"] for r in rows]
    bottom = [0] * len(rows)
    for kind in COUNTED:
        values = [r["firm"].get(kind, 0) for r in rows]
        ax.barh(names, values, left=bottom, label=kind)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xlabel("firm divergences from the reference body")
    ax.tick_params(axis="y", labelsize=6)
    ax.legend()
    ax.set_title("Where greedy decoding leaves the reference, per task")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--gap", type=float, default=2.0, help="nats that make a divergence firm")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    args = parser.parse_args(argv)
    wanted = {t for t in args.tasks.split(",") if t}
    loaded = load(LoadRequest())
    rows = []
    for task in load_tasks():
        if wanted and task.id not in wanted:
            continue
        prompt = path_comment("prompt.py") + (task.path / "prompt.py").read_text()
        body = (task.path / "solution.py").read_text()
        forced = force(loaded.model, loaded.tokenizer, prompt, body, args.gap)
        rows.append({**summarise(task, forced), "all": forced["divergences"]})
        print(task.id, rows[-1]["firm"], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    text = report(rows, args.gap)
    (args.out / "teacher_forcing.md").write_text(text)
    (args.out / "teacher_forcing.json").write_text(json.dumps(rows, indent=1))
    plot(rows, args.out / "teacher_forcing.png")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
