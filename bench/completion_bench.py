"""How fast are steerlsp's inline completions, and where does the time go?

One run, strictly sequential (two cores: never two generations at once):

1. Positions, seeded, in real stdlib modules. Single-line: after a name or ``(`` inside a
   one-line statement, the rest of the file after the cursor. Multi-line: an empty indented
   line after a block header, its body removed, the rest of the file after the cursor.
2. Server: the real ``steerlsp`` over stdio, default model and settings (48 new tokens).
   Each position is opened once under a fresh uri; after pylsp's diagnostics arrive (its
   linting would compete for the CPU) ``textDocument/inlineCompletion`` (Invoked: no
   debounce) is timed from write to reply. After the first few single-line positions, 3
   characters that do not start the suggestion are typed (``didChange``: warm KV cache)
   and the same text is requested under a fresh uri (cold). steerlsp's and pylsp's RSS
   come from ``/proc`` when ready and after the run; then shutdown + exit.
3. Direct: the model loaded here as the server loads it, ``Completer.complete`` on the same
   positions in the same order; overhead = server / direct. The warm/cold pair is repeated
   for ``Generation.reused_tokens`` and prefill times.
4. Decode: 32 tokens (EOS masked, as ``min_new_tokens`` does) on the first recorded prompts
   from ``model.generate()`` on a fresh fp32 model, ``Engine`` on that model (fp32 head)
   and ``Engine`` on the model as the server loads it. Decode-only tokens/s: tokens 2..N
   over the time from the first token to the last.

Prints a Markdown table with PASS/MISS per target; writes OUT/completion_bench.json (all
records and load averages) and OUT/completion_bench.png.

Run: PYTHONPATH=. .venv/bin/python bench/completion_bench.py --out bench/results [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import io
import itertools
import json
import os
import random
import re
import statistics
import tempfile
import time
import tokenize
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from steerlsp.models.decoding.completer import Completer
from steerlsp.models.decoding.completer import load_completer as load_server_completer
from steerlsp.models.decoding.engine import Engine
from steerlsp.models.decoding.worker import CancelToken
from steerlsp.models.loading.load import LoadRequest, load
from steerlsp.models.options import CompletionOptions, CompletionRequest
from tests.helpers.rawclient import RawClient, steerlsp_command

MODULES = ("textwrap", "json.decoder", "shlex", "fnmatch")
CAPS = {"textDocument": {"inlineCompletion": {}}, "general": {"positionEncodings": ["utf-16"]}}
TYPED = ("foo", "tmp", "xyz")  # the first that is not a prefix of the suggestion is typed
DECODE_TOKENS = 32
TARGETS = {"overhead": 1.10, "cache_speedup": 3.0, "decode_ratio": 1.5, "rss_mb": 1500}
GENERATION_FACTS = ("prompt_tokens", "reused_tokens", "prefill_seconds", "decode_seconds", "stop")
GENERATE, ENGINES = "generate_fp32", ("engine_fp32", "engine_server")
LOADS: dict[str, tuple[float, ...]] = {}


@dataclass(frozen=True)
class Position:
    name: str  # file name, unique per request
    kind: str  # "single" | "multi"
    prefix: str
    suffix: str

    def cursor(self) -> dict[str, int]:
        """LSP position of the cursor: 0-based line, UTF-16 column."""
        line = self.prefix.rpartition("\n")[2]
        return {"line": self.prefix.count("\n"), "character": len(line.encode("utf-16-le")) // 2}

    def typed(self, chars: str) -> Position:
        return replace(self, name=f"typed_{self.name}", prefix=self.prefix + chars)


WARMUP = Position("warmup", "single", "import os\nos.path.", "\n")


# ---- positions -------------------------------------------------------------


def candidates(source: str) -> list[tuple[int, Position]]:
    """Every (row, unnamed position) of both kinds in ``source``; rows are 1-based."""
    starts = [0, *itertools.accumulate(map(len, source.splitlines(keepends=True)))]
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE}
    found: list[tuple[int, Position]] = []
    statement: list[tokenize.TokenInfo] = []
    for index, tok in enumerate(tokens):
        if tok.type not in skip:
            statement.append(tok)
            continue
        if tok.type != tokenize.NEWLINE or not statement:
            continue
        row = statement[0].start[0]
        if row == statement[-1].end[0] and statement[0].type != tokenize.STRING:
            for mid in statement[1:-1]:  # after a name or "(", text left on the line
                if mid.type == tokenize.NAME or mid.string == "(":
                    at = starts[row - 1] + mid.end[1]
                    found.append((row, Position("", "single", source[:at], source[at:])))
        if statement[-1].string == ":" and (body := _body(tokens, index + 1)):
            indent, end_row = body
            prefix = source[: starts[tok.start[0]]] + indent
            suffix = "\n" + source[starts[end_row - 1] :]
            found.append((row, Position("", "multi", prefix, suffix)))
        statement = []
    return found


def _body(tokens: list[tokenize.TokenInfo], index: int) -> tuple[str, int] | None:
    """(indent, first row after the block) for a block opening at ``tokens[index]``."""
    while tokens[index].type in (tokenize.NL, tokenize.COMMENT):
        index += 1
    if tokens[index].type != tokenize.INDENT:
        return None  # a one-line body after the colon
    depth = 0
    for tok in tokens[index:]:
        depth += {tokenize.INDENT: 1, tokenize.DEDENT: -1}.get(tok.type, 0)
        if depth == 0:
            return tokens[index].string, tok.start[0]
    return None


def build_positions(per_kind: int, seed: int) -> list[Position]:
    """``per_kind`` positions of each kind, one per line, round-robin over MODULES."""
    rng = random.Random(seed)
    pools: dict[str, list[list[Position]]] = {"single": [], "multi": []}
    for module in MODULES:
        source = Path(importlib.import_module(module).__file__ or "").read_text()
        by_row: dict[tuple[str, int], list[Position]] = {}
        for row, p in candidates(source):
            by_row.setdefault((p.kind, row), []).append(replace(p, name=module.replace(".", "_")))
        for kind, pool in pools.items():
            rows = [key for key in by_row if key[0] == kind]
            pool.append([rng.choice(by_row[key]) for key in rng.sample(rows, len(rows))])
    picked = {kind: _round_robin(pool, per_kind) for kind, pool in pools.items()}
    ordered = [p for pair in zip(picked["single"], picked["multi"], strict=True) for p in pair]
    return [replace(p, name=f"p{i:02d}_{p.kind}_{p.name}") for i, p in enumerate(ordered)]


def _round_robin(pools: list[list[Position]], count: int) -> list[Position]:
    mixed = itertools.chain.from_iterable(itertools.zip_longest(*pools))
    return [p for p in mixed if p is not None][:count]


# ---- server ----------------------------------------------------------------


def record(position: Position, seconds: float, text: str, **extra: Any) -> dict[str, Any]:
    """One timed completion, as stored in the JSON."""
    return {"name": position.name, "kind": position.kind, "seconds": seconds, "text": text, **extra}


def rss_mb(pid: int) -> float:
    """VmRSS of ``pid`` in MB; 0 once it is gone."""
    with contextlib.suppress(OSError):
        found = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
        return int(found[1]) / 1024 if found else 0.0
    return 0.0


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (steerlsp's pylsp), from ``/proc/*/stat``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def memory(pid: int) -> dict[str, Any]:
    return {"steerlsp": rss_mb(pid), "pylsp": [rss_mb(child) for child in children(pid)]}


class Session:
    """One steerlsp over stdio: open or change a document, let pylsp lint, time a request."""

    def __init__(self, client: RawClient, root: Path) -> None:
        self.client, self.root = client, root
        self.settle_timeouts = 0

    def uri(self, position: Position) -> str:
        return (self.root / f"{position.name}.py").as_uri()

    def linted(self, uri: str) -> int:
        """How many times pylsp has published diagnostics for ``uri``."""
        notes = self.client.notifications_of("textDocument/publishDiagnostics")
        return sum(n["params"]["uri"] == uri for n in notes)

    async def settle(self, uri: str, seen: int) -> None:
        """Wait for pylsp's diagnostics on the new text: its linting competes for the CPU."""
        try:
            await self.client.wait_for(lambda: self.linted(uri) > seen, 15)
        except TimeoutError:
            self.settle_timeouts += 1

    async def inline(self, position: Position, uri: str) -> dict[str, Any]:
        """Time one ``textDocument/inlineCompletion`` from write to reply (Invoked: no debounce)."""
        cursor = position.cursor()
        params = {"textDocument": {"uri": uri}, "position": cursor, "context": {"triggerKind": 1}}
        started = time.perf_counter()
        reply = await self.client.request("textDocument/inlineCompletion", params, timeout=300)
        seconds = time.perf_counter() - started
        assert "result" in reply, reply
        items = reply["result"]["items"]
        return record(position, seconds, items[0]["insertText"] if items else "")

    async def show(self, position: Position, uri: str, version: int = 1) -> dict[str, Any]:
        """Open (version 1) or replace the text at ``uri``, let pylsp lint it, then request."""
        seen, text = self.linted(uri), position.prefix + position.suffix
        if version == 1:
            self.client.open(uri, text)
        else:
            change = {"uri": uri, "version": version}
            self.client.notify(
                "textDocument/didChange",
                {"textDocument": change, "contentChanges": [{"text": text}]},
            )
        await self.settle(uri, seen)
        return await self.inline(position, uri)


async def server_pass(positions: list[Position], cached: int) -> dict[str, Any]:
    """Latency at every position; warm/cold pairs after the first ``cached`` single-line ones."""
    client = await RawClient.start(steerlsp_command())
    try:
        with tempfile.TemporaryDirectory() as root:
            await client.initialize(Path(root), CAPS)
            started = time.perf_counter()
            while (await client.request("steerlsp/status"))["result"]["model"]["state"] != "ready":
                await asyncio.sleep(0.2)
            out: dict[str, Any] = {"ready_s": time.perf_counter() - started, "cache": []}
            out["rss_ready"] = memory(client.proc.pid)
            session = Session(client, Path(root))
            await session.show(WARMUP, session.uri(WARMUP))
            out["latency"] = []
            for position in positions:
                uri = session.uri(position)
                out["latency"].append(first := await session.show(position, uri))
                if position.kind == "single" and len(out["cache"]) < cached:
                    chars = next(c for c in TYPED if not first["text"].startswith(c))
                    after = position.typed(chars)
                    warm = await session.show(after, uri, version=2)  # typed in the open doc
                    cold = await session.show(after, session.uri(after))
                    out["cache"].append(
                        {"name": position.name, "typed": chars, "warm": warm, "cold": cold}
                    )
            out["rss_after"] = memory(client.proc.pid)
            out["settle_timeouts"] = session.settle_timeouts
            upstream = children(client.proc.pid)
            out["exit_code"] = await client.shutdown()
            out["upstream_left"] = [pid for pid in upstream if Path(f"/proc/{pid}").exists()]
            return out
    finally:
        await client.close()


# ---- direct ----------------------------------------------------------------


def load_completer() -> Completer:
    """The model as the server loads it (on a CPU: the int8 head, bf16 linear layers
    where the CPU has native bf16), FIM template auto-detected."""
    return load_server_completer(LoadRequest())


def complete(completer: Completer, position: Position) -> dict[str, Any]:
    request = CompletionRequest(position.prefix, position.suffix, f"{position.name}.py")
    started = time.perf_counter()
    result = completer.complete(request, CompletionOptions(), CancelToken())
    seconds, g = time.perf_counter() - started, result.generation
    facts = {name: getattr(g, name) for name in GENERATION_FACTS}
    return record(position, seconds, result.text, tokens=len(g.token_ids), **facts)


def direct_pass(completer: Completer, positions: list[Position], cache: list[dict]) -> dict:
    """The server pass's completions, in its order, on ``completer``; keeps their prompts."""
    prompts: list[list[int]] = []
    generate = completer.engine.generate

    def recording(ids: list[int], **kwargs: Any) -> Any:
        prompts.append(list(ids))
        return generate(ids, **kwargs)

    completer.engine.generate = recording
    complete(completer, WARMUP)
    typed = {entry["name"]: entry["typed"] for entry in cache}
    out: dict[str, Any] = {"latency": [], "cache": [], "prompts": []}
    for position in positions:
        out["latency"].append(complete(completer, position))
        out["prompts"].append(prompts[-1])
        if position.name in typed:
            after = position.typed(typed[position.name])
            warm = complete(completer, replace(after, name=position.name))  # same uri
            completer.engine.reset()
            out["cache"].append({"warm": warm, "cold": complete(completer, after)})
    del completer.engine.generate
    out["rss"] = rss_mb(os.getpid())
    return out


# ---- decode speed ----------------------------------------------------------


def run_generate(model: Any, ids: list[int], n: int) -> dict[str, Any]:
    times: list[float] = []  # a streamer's first put is the prompt, then one per token
    streamer = SimpleNamespace(put=lambda _: times.append(time.perf_counter()), end=lambda: None)
    greedy = {"max_new_tokens": n, "min_new_tokens": n, "do_sample": False, "pad_token_id": 0}
    started, prompt = time.perf_counter(), torch.tensor([ids])
    out = model.generate(
        prompt, attention_mask=torch.ones_like(prompt), streamer=streamer, **greedy
    )
    return speed(out[0, len(ids) :].tolist(), started, times[1:])


def run_engine(engine: Engine, ids: list[int], n: int) -> dict[str, Any]:
    eos = torch.tensor(sorted(engine.eos_ids))
    times: list[float] = []
    no_eos = lambda history, scores: scores.index_fill(-1, eos, float("-inf"))  # noqa: E731

    def clock(text: str) -> bool:  # should_stop: timestamps each token, never stops
        times.append(time.perf_counter())
        return False

    engine.reset()
    started = time.perf_counter()
    generation = engine.generate(ids, max_new_tokens=n, processors=[no_eos], should_stop=clock)
    return speed(generation.token_ids, started, times)


def speed(tokens: list[int], started: float, times: list[float]) -> dict[str, Any]:
    """``times``: when each token was ready. Decode-only skips the prefill's token."""
    total = time.perf_counter() - started
    decode_tps = (len(times) - 1) / (times[-1] - times[0])
    return {"tokens": tokens, "e2e_tps": len(tokens) / total, "decode_tps": decode_tps}


def decode_pass(completer: Completer, prompts: list[list[int]], n: int) -> dict[str, Any]:
    """generate() vs Engine (fp32, the server's weights), interleaved per prompt."""
    fp32 = load(LoadRequest()).model
    engines = {
        "engine_fp32": Engine(fp32, completer.tokenizer),
        "engine_server": Engine(completer.loaded.model, completer.tokenizer),
    }

    def run(name: str, ids: list[int], k: int) -> dict[str, Any]:
        return run_generate(fp32, ids, k) if name == GENERATE else run_engine(engines[name], ids, k)

    names = (GENERATE, *engines)
    for name in names:
        run(name, prompts[0][:32], 4)  # warm-up
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for ids in prompts:
        for name in names:
            runs[name].append(run(name, ids, n))
    out: dict[str, Any] = {"runs": runs}
    for name, items in runs.items():
        out[name] = {k: statistics.median(r[k] for r in items) for k in ("e2e_tps", "decode_tps")}
    out["agree_server"] = agreement(runs["engine_fp32"], runs["engine_server"])
    out["agree_generate"] = agreement(runs[GENERATE], runs["engine_fp32"])
    return out


def agreement(reference: list[dict], other: list[dict]) -> dict[str, float]:
    """Share of token positions equal before the first divergence; share of identical runs."""
    agreed = total = same = 0
    for a, b in zip(reference, other, strict=True):
        pairs = zip(a["tokens"], b["tokens"], strict=True)
        agreed += next((i for i, (x, y) in enumerate(pairs) if x != y), len(a["tokens"]))
        total += len(a["tokens"])
        same += a["tokens"] == b["tokens"]
    return {"positions": agreed / total, "identical": same / len(reference)}


# ---- report ----------------------------------------------------------------


def ms(seconds: list[float], q: float = 50) -> float:
    return float(np.percentile(seconds, q) * 1000)


def latency_stats(server: list[dict], direct: list[dict]) -> dict[str, float]:
    srv, dct = [r["seconds"] for r in server], [r["seconds"] for r in direct]
    paired = statistics.median(a / b for a, b in zip(srv, dct, strict=True))
    ratio = statistics.median(srv) / statistics.median(dct)
    quantiles = {f"{side}_p{q}": ms(xs, q) for side, xs in (("server", srv), ("direct", dct))
                 for q in (50, 95)}  # fmt: skip
    return {"n": len(srv), "ratio": ratio, "paired": paired, **quantiles}


def summarize(server: dict, direct: dict, decode: dict) -> dict[str, Any]:
    s: dict[str, Any] = {}
    for kind in ("single", "multi", "all"):
        rows = [[r for r in d["latency"] if kind in ("all", r["kind"])] for d in (server, direct)]
        s[kind] = latency_stats(*rows)
    pairs = [(c["cold"]["seconds"], c["warm"]["seconds"]) for c in server["cache"]]
    gens = direct["cache"]
    s["cache"] = {
        "cold_ms": ms([cold for cold, _ in pairs]),
        "warm_ms": ms([warm for _, warm in pairs]),
        "speedup": statistics.median(cold / warm for cold, warm in pairs),
        "cold_prefill_ms": ms([c["cold"]["prefill_seconds"] for c in gens]),
        "warm_prefill_ms": ms([c["warm"]["prefill_seconds"] for c in gens]),
        "reused": [f"{c['warm']['reused_tokens']}/{c['warm']['prompt_tokens']}" for c in gens],
    }
    for key in ("decode_tps", "e2e_tps"):
        s[key + "_ratio"] = {e: decode[e][key] / decode[GENERATE][key] for e in ENGINES}
    s["rss_mb"] = max(server[k]["steerlsp"] for k in ("rss_ready", "rss_after"))
    s["empty"] = [r["name"] for r in server["latency"] if not r["text"].strip()]
    texts = zip(server["latency"], direct["latency"], strict=True)
    s["text_differs"] = [a["name"] for a, b in texts if a["text"] != b["text"]]
    return s


def table(s: dict, server: dict, direct: dict, decode: dict) -> str:
    """The Markdown table: metric, value, target, PASS/MISS (None: no target)."""
    t, c = TARGETS, s["cache"]
    rows: list[tuple[str, str, str, bool | None]] = []
    for kind, side in itertools.product(("single", "multi"), ("server", "direct")):
        k = s[kind]
        value = f"{k[side + '_p50']:.0f} / {k[side + '_p95']:.0f} ms"
        rows.append((f"{kind}-line {side} p50 / p95 (n={k['n']})", value, "", None))
    for kind in ("single", "multi", "all"):
        value = f"{s[kind]['ratio']:.3f}x (paired median {s[kind]['paired']:.3f}x)"
        ok = s[kind]["ratio"] <= t["overhead"] if kind == "all" else None
        rows.append((f"overhead {kind}: server / direct", value, f"<= {t['overhead']}x", ok))
    value = f"{c['cold_ms']:.0f} / {c['warm_ms']:.0f} ms: {c['speedup']:.1f}x"
    ok = c["speedup"] >= t["cache_speedup"]
    rows.append(("prefix cache cold / warm (+3 chars)", value, f">= {t['cache_speedup']}x", ok))
    value = f"{c['cold_prefill_ms']:.0f} / {c['warm_prefill_ms']:.0f} ms; reused {c['reused']}"
    rows.append(("completer prefill cold / warm", value, "", None))
    for name in (GENERATE, *ENGINES):
        value = f"{decode[name]['decode_tps']:.1f} / {decode[name]['e2e_tps']:.1f}"
        rows.append((f"{name} tokens/s decode-only / e2e", value, "", None))
    for name in ENGINES:
        value = f"{s['decode_tps_ratio'][name]:.2f}x (e2e {s['e2e_tps_ratio'][name]:.2f}x)"
        ok = s["decode_tps_ratio"][name] >= t["decode_ratio"] if name == "engine_server" else None
        rows.append((f"{name} / generate, decode-only", value, f">= {t['decode_ratio']}x", ok))
    for name, a in (("server weights / fp32 engine", decode["agree_server"]),
                    ("fp32 engine / generate", decode["agree_generate"])):  # fmt: skip
        value = f"{a['positions']:.1%} of positions, {a['identical']:.0%} of prompts identical"
        rows.append((f"greedy agreement {name}", value, "", None))
    for when in ("ready", "after"):
        m = server[f"rss_{when}"]
        value = f"{m['steerlsp']:.0f} MB (pylsp {', '.join(f'{u:.0f}' for u in m['pylsp'])} MB)"
        rows.append((f"RSS steerlsp (pylsp), {when} latency run", value, "", None))
    ok = s["rss_mb"] < t["rss_mb"]
    rows.append(("steerlsp RSS max", f"{s['rss_mb']:.0f} MB", f"< {t['rss_mb']} MB", ok))
    rows.append(("bench process RSS after direct run", f"{direct['rss']:.0f} MB", "", None))
    rows.append(("empty completions", f"{len(s['empty'])} of {s['all']['n']}", "", None))
    loads = " / ".join(f"{v[0]:.2f}" for v in LOADS.values())
    rows.append((f"load average 1 min ({' / '.join(LOADS)})", loads, "", None))
    verdict = {True: "PASS", False: "MISS", None: ""}
    lines = ["| metric | value | target | result |", "|---|---|---|---|"]
    return "\n".join(lines + [f"| {m} | {v} | {t} | {verdict[ok]} |" for m, v, t, ok in rows])


def plot(server: dict, direct: dict, decode: dict, s: dict, path: Path) -> None:
    """Latency per kind, server vs direct; tokens/s per decode loop."""
    fig, (lat, tps) = plt.subplots(1, 2, figsize=(13, 5))
    groups = {
        f"{side}\n{kind}": [r["seconds"] * 1000 for r in rows["latency"] if r["kind"] == kind]
        for kind in ("single", "multi")
        for side, rows in (("server", server), ("direct", direct))
    }
    lat.boxplot(list(groups.values()), tick_labels=list(groups), showfliers=False)
    for i, values in enumerate(groups.values(), 1):
        jitter = np.linspace(-0.15, 0.15, len(values))
        lat.scatter(i + jitter, values, s=8, alpha=0.6)
    lat.set(ylabel="ms", title=f"time to result (server / direct {s['all']['ratio']:.2f}x)")
    names, x = (GENERATE, *ENGINES), np.arange(3)
    for shift, key in ((-0.2, "decode_tps"), (0.2, "e2e_tps")):
        tps.bar(x + shift, [decode[n][key] for n in names], width=0.4, label=key)
    tps.set(xticks=x, xticklabels=names, ylabel="tokens/s", title=f"{DECODE_TOKENS} greedy tokens")
    tps.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--positions", type=int, default=20, help="per kind (single, multi)")
    parser.add_argument("--decode-prompts", type=int, default=6)
    parser.add_argument("--cache-positions", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="4 positions per kind, 2 of others")
    args = parser.parse_args()
    if args.quick:
        args.positions, args.decode_prompts, args.cache_positions = 4, 2, 2
    LOADS["start"] = os.getloadavg()
    positions = build_positions(args.positions, args.seed)
    server = asyncio.run(server_pass(positions, args.cache_positions))
    LOADS["server"] = os.getloadavg()
    completer = load_completer()
    direct = direct_pass(completer, positions, server["cache"])
    LOADS["direct"] = os.getloadavg()
    decode = decode_pass(completer, direct.pop("prompts")[: args.decode_prompts], DECODE_TOKENS)
    LOADS["end"] = os.getloadavg()
    s = summarize(server, direct, decode)
    print(table(s, server, direct, decode))
    args.out.mkdir(parents=True, exist_ok=True)
    plot(server, direct, decode, s, args.out / "completion_bench.png")
    runs = {"server": server, "direct": direct, "decode": decode}
    report: dict[str, Any] = {
        "args": vars(args) | {"out": str(args.out)},
        "load_average": LOADS,
        "summary": s,
    }
    report |= runs | {"positions": [asdict(p) | {"cursor": p.cursor()} for p in positions]}
    (args.out / "completion_bench.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
