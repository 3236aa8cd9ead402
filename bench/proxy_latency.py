"""How much latency does steerlsp add on top of the language server it proxies?

Two upstreams, each measured direct and through ``steerlsp --bench-methods
--no-model`` (no model: this measures the proxy, not AI completions):

- **echo** (``tests/doubles/fake_upstream.py``): answers at once, with fixed timing.
  Requests alternate ``textDocument/hover`` (a tiny result) and ``fake/echo``
  whose params, returned as its result, are a ~20 KB completion-like list, so
  (de)serialising a large completion response is included (pylsp's own
  completions on textwrap are mostly far smaller, median ~0.2 KB and p90
  ~5 KB; an empty prefix gives far larger ones). Direct latency is a fraction
  of a millisecond and tight, so proxied minus direct here is the **precise
  measure of the proxy's own overhead**, p99 included.
- **pylsp**: the real server, on a real module (stdlib ``textwrap.py`` or
  ``--file``, copied into a fresh folder that is the rootUri), seeded hover /
  completion / definition requests at identifier positions (UTF-16 columns).
  This is the **realistic end-to-end** measure. Its p99s are pylsp's own: it
  stalls ~300 ms on ~1% of requests, at random, so a difference of p99s there
  is mostly which side drew more stalls, not the proxy.

Each upstream: both servers open the document, a warm-up, then the same
requests one at a time in blocks of 50 alternating between direct and proxied
(alternating who goes first), so machine noise hits both alike; results are
compared. Scenario "idle", then "busy": steerlsp always has a
``steerlsp/benchBusy`` (a GIL-holding worker thread, standing in for model
work) running meanwhile. The full run (1000 requests per scenario) takes
about 3-6 minutes on 2 cores, nearly all of it pylsp; ``--quick`` is 200.

Everything is reported per method: methods' latencies differ ~20x (pylsp
definition ~1.5 ms, hover/completion ~30 ms), so a pooled "all" p50 falls in the
gap between the clusters and moves with the mix rather than the proxy, and a
pooled p99 is just pylsp's stalls. There is no pooled row.

Prints a Markdown table per scenario and method (p50/p99 direct and proxied,
added = proxied percentile - direct percentile, ratio), PASS/MISS per scenario
and method for added p50 <= 1 ms and added p99 <= 5 ms, and a headline per
upstream; writes OUT/proxy_latency.json and OUT/proxy_latency.png (latency CDFs,
upstream x idle/busy); exits 0. Paired per-request differences and median result
sizes are in the JSON.

Run: .venv/bin/python bench/proxy_latency.py [--requests 1000 | --quick] [--out bench/results]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import keyword
import random
import sys
import tempfile
import textwrap
import time
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, bench/ is a package
from bench.lspbench import (
    BusyKeeper,
    LspClient,
    Request,
    Samples,
    markdown,
    measure,
    short,
    summarize,
)

HOVER, COMPLETION, DEFINITION = (
    "textDocument/hover",
    "textDocument/completion",
    "textDocument/definition",
)
ECHO = "fake/echo"
FAKE_UPSTREAM = str(Path(__file__).resolve().parents[1] / "tests" / "doubles" / "fake_upstream.py")
STEERLSP = [sys.executable, "-m", "steerlsp", "--bench-methods", "--no-model"]
WARMUP, QUICK_REQUESTS, ECHO_BYTES = 30, 200, 20_000
TARGETS_MS = {"p50": 1.0, "p99": 5.0}


@dataclass(frozen=True)
class Upstream:
    name: str
    direct: list[str]
    proxied: list[str]  # --upstream takes the rest of argv: it must come last
    methods: tuple[str, ...]
    role: str


UPSTREAMS = {
    "echo": Upstream(
        "echo",
        [sys.executable, FAKE_UPSTREAM],
        [*STEERLSP, "--upstream", sys.executable, FAKE_UPSTREAM],
        (HOVER, ECHO),
        "the proxy's own overhead (fixed-timing upstream; precise)",
    ),
    "pylsp": Upstream(
        "pylsp",
        [sys.executable, "-m", "pylsp"],
        STEERLSP,
        (HOVER, COMPLETION, DEFINITION),
        "realistic end-to-end (p99 dominated by pylsp's own stalls)",
    ),
}


def identifiers(text: str) -> list[tuple[tokenize.TokenInfo, bool]]:
    """Every non-keyword NAME token, and whether a "." comes right before it."""
    names, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            names.append((tok, prev is not None and prev.string == "."))
        prev = tok
    return names


def echo_payload(names: list[str], uri: str) -> dict[str, object]:
    """A completion-list-shaped object of about ECHO_BYTES of JSON, like pylsp's."""
    items: list[dict[str, object]] = []
    for name in itertools.cycle(sorted(set(names))):
        items.append(
            {
                "label": f"{name}(text, width=70)",
                "kind": 3,
                "sortText": f"a{name}",
                "insertText": name,
                "detail": "textwrap",
                "documentation": f"{name}: wrap or fill a paragraph of text.",
                "data": {"doc_uri": uri},
            }
        )
        if len(json.dumps(items)) >= ECHO_BYTES:
            return {"isIncomplete": False, "items": items}
    raise AssertionError("unreachable")


def build_requests(upstream: Upstream, text: str, uri: str, count: int, seed: int) -> list[Request]:
    """``count`` requests cycling over the upstream's methods at random identifier
    occurrences: hover mid-name, definition at its start, completion at its end
    (or right after the "." before it, half of the time); echo sends the payload."""
    lines = text.splitlines(keepends=True)
    names = identifiers(text)
    payload = echo_payload([tok.string for tok, _ in names], uri)
    rng = random.Random(seed)
    requests = []
    for i in range(count):
        method = upstream.methods[i % len(upstream.methods)]
        if method == ECHO:
            requests.append(Request(method, {"seq": i, "result": payload}, f"echo #{i}"))
            continue
        tok, after_dot = rng.choice(names)
        (row, start), (_, end) = tok.start, tok.end
        if method == HOVER:
            col = (start + end) // 2
        elif method == DEFINITION or (after_dot and rng.random() < 0.5):
            col = start
        else:
            col = end
        utf16 = len(lines[row - 1][:col].encode("utf-16-le")) // 2
        params = {"textDocument": {"uri": uri}, "position": {"line": row - 1, "character": utf16}}
        requests.append(Request(method, params, f"{short(method)} {row - 1}:{utf16}"))
    return requests


def run(upstream: Upstream, path: Path, count: int, seed: int) -> dict[str, Samples]:
    """Start both servers, warm up, measure idle then busy; always shut them down."""
    text = path.read_text(encoding="utf-8")
    requests = build_requests(upstream, text, path.as_uri(), WARMUP + count, seed)
    results = {f"{upstream.name} idle": Samples(), f"{upstream.name} busy": Samples()}
    idle, busy = results.values()
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        clients = []
        for name, command in (("direct", upstream.direct), ("proxied", upstream.proxied)):
            clients.append(LspClient(name, command))
            stack.callback(clients[-1].close)
            clients[-1].open_document(path, text)
        proxied = clients[1]
        status = proxied.request("steerlsp/status")[0]["result"]
        proxied.extra_pids.append(status["upstream"]["pid"])
        measure(clients, requests[:WARMUP], Samples())  # warm-up, not counted
        measure(clients, requests[WARMUP:], idle)
        keeper = BusyKeeper(proxied)
        stack.callback(keeper.stop)
        keeper.start()
        measure(clients, requests[WARMUP:], busy)
        busy.problems += [f"proxied benchBusy: error {e}" for e in keeper.errors]
    print(
        f"{upstream.name}: {2 * count} requests per server in {time.monotonic() - started:.0f} s;"
        f" benchBusy requests completed while busy: {keeper.completed}",
        file=sys.stderr,
    )
    return results


def verdicts(summary: dict[str, dict[str, dict[str, float]]]) -> dict[str, bool]:
    """``"scenario method pQ"`` -> whether added pQ is within its target."""
    return {
        f"{scenario} {method} {q}": row[f"added_{q}"] <= limit
        for scenario, rows in summary.items()
        for method, row in rows.items()
        for q, limit in TARGETS_MS.items()
    }


def verdict_lines(summary: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    lines = []
    for key, ok in verdicts(summary).items():
        scenario, method, q = key.rsplit(" ", 2)
        added = summary[scenario][method][f"added_{q}"]
        limit = TARGETS_MS[q]
        lines.append(f"{'PASS' if ok else 'MISS'} {key}: added {added:+.2f} ms (<= {limit:g})")
    return lines


def headlines(summary: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """One line per upstream: all of its per-method checks, and the worst added."""
    checks = verdicts(summary)
    lines = []
    for upstream in UPSTREAMS.values():
        mine = {k: ok for k, ok in checks.items() if k.startswith(upstream.name + " ")}
        if not mine:
            continue
        worst = []
        for q in TARGETS_MS:
            cells = [
                (row[f"added_{q}"], f"{scenario.split()[1]} {method}")
                for scenario, rows in summary.items()
                if scenario.startswith(upstream.name + " ")
                for method, row in rows.items()
            ]
            value, where = max(cells)
            worst.append(f"worst added {q} {value:+.2f} ms ({where})")
        verdict = "PASS" if all(mine.values()) else "MISS"
        passed = f"{sum(mine.values())}/{len(mine)} checks pass"
        lines.append(f"{verdict} {upstream.name}, {upstream.role}: {passed}; " + "; ".join(worst))
    return lines


def plot(results: dict[str, Samples], path: Path, count: int) -> None:
    """Latency CDFs per method, direct (solid) vs proxied (dashed): a row per
    upstream, a column per idle/busy."""
    names = list(dict.fromkeys(scenario.split()[0] for scenario in results))
    fig, axes = plt.subplots(len(names), 2, figsize=(13, 4.6 * len(names)), squeeze=False)
    for row, name in zip(axes, names, strict=True):
        for ax, state in zip(row, ("idle", "busy"), strict=True):
            samples = results[f"{name} {state}"]
            methods = np.array(samples.methods)
            for color, method in zip(("C0", "C1", "C2"), dict.fromkeys(methods), strict=False):
                for server, style in (("direct", "-"), ("proxied", "--")):
                    ms = np.sort(np.array(samples.ms[server])[methods == method])
                    frac = np.arange(1, len(ms) + 1) / len(ms)
                    label = f"{short(method)} {server}"
                    ax.plot(ms, frac, style, color=color, label=label)
            title = f"{name} {state}: direct vs proxied ({UPSTREAMS[name].role.split(' (')[0]})"
            ax.set(xscale="log", xlabel="latency (ms)", title=title)
            ax.set(ylabel="fraction of requests", ylim=(0, 1.01))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8, loc="lower right")
        lows, highs = zip(*(ax.get_xlim() for ax in row), strict=True)
        for ax in row:  # one scale per upstream, so idle and busy compare by eye
            ax.set_xlim(min(lows), max(highs))
    fig.suptitle(f"steerlsp proxy latency, {count} requests per scenario")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="measured requests per scenario")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REQUESTS} requests per scenario"
    )
    parser.add_argument("--only", choices=list(UPSTREAMS), help="measure just this upstream")
    parser.add_argument("--file", default=textwrap.__file__, help="module (default: textwrap)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    count = QUICK_REQUESTS if args.quick else args.requests
    started = time.monotonic()
    source = Path(args.file).resolve()
    text = source.read_text(encoding="utf-8")
    results: dict[str, Samples] = {}
    try:
        # A copy in a fresh folder: with the stdlib folder as its project root, jedi
        # spends seconds per hover, which would bury what we measure.
        with tempfile.TemporaryDirectory(prefix="proxy_latency-") as folder:
            path = Path(folder) / source.name
            path.write_text(text, encoding="utf-8")
            for name in ("pylsp", "echo"):
                if args.only in (None, name):
                    results |= run(UPSTREAMS[name], path, count, args.seed)
    except KeyboardInterrupt:
        print("interrupted; servers shut down", file=sys.stderr)
        return 130
    summary = {scenario: summarize(samples) for scenario, samples in results.items()}
    problems = [p for samples in results.values() for p in samples.problems]
    args.out.mkdir(parents=True, exist_ok=True)
    plot(results, args.out / "proxy_latency.png", count)
    report = {"file": str(source), "requests": count, "seed": args.seed, "warmup": WARMUP}
    report |= {"targets_ms": TARGETS_MS, "summary": summary, "verdicts": verdict_lines(summary)}
    report |= {"headlines": headlines(summary), "problems": problems}
    report |= {"samples": {k: asdict(v) for k, v in results.items()}}
    (args.out / "proxy_latency.json").write_text(json.dumps(report, indent=1))
    print(markdown(summary), "", *verdict_lines(summary), "", *headlines(summary), sep="\n")
    print(f"\n{len(problems)} problem(s)", *problems[:20], sep="\n")
    print(f"wrote {args.out}/proxy_latency.json and .png in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
