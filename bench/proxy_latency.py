"""How much latency does steerlsp add on top of the pylsp it proxies?

One raw JSON-RPC client (Content-Length framing over stdio, a reader thread,
replies matched by id, server->client requests answered with null) drives direct
``pylsp`` and ``steerlsp --bench-methods`` (with its own pylsp) in one run. Both
open a real module (stdlib ``textwrap.py`` or ``--file``, copied into a fresh
folder that is the rootUri) and get the same seeded hover / completion /
definition requests at identifier positions (UTF-16 columns), one at a time,
each timed with ``time.perf_counter()`` from its write until its reply is read.
After a warm-up, blocks of requests alternate between the servers (same block,
alternating who goes first) so machine noise hits both alike; results are
compared too. Scenario "idle", then "busy": steerlsp always has a
``steerlsp/benchBusy`` (a GIL-holding worker thread) running meanwhile.

Prints a Markdown table (p50/p99 of direct and proxied, added = proxied - direct,
ratio, percentiles of paired per-request differences) and PASS/MISS for added
p50 <= 1 ms and p99 <= 5 ms; writes OUT/proxy_latency.json and .png; exits 0.

Run: .venv/bin/python bench/proxy_latency.py --requests 1000 --out bench/results
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import keyword
import os
import random
import signal
import sys
import tempfile
import textwrap
import threading
import time
import tokenize
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from subprocess import DEVNULL, PIPE, Popen
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

METHODS = ("textDocument/hover", "textDocument/completion", "textDocument/definition")
SERVERS = {
    "direct": [sys.executable, "-m", "pylsp"],
    "proxied": [sys.executable, "-m", "steerlsp", "--bench-methods"],
}
BUSY_SECONDS = 600.0  # more than steerlsp runs one for; BusyKeeper re-sends on completion
WARMUP, BLOCK, TIMEOUT = 30, 50, 30.0
TARGETS_MS = {"p50": 1.0, "p99": 5.0}
Reply = Callable[[dict[str, Any] | None, float], None]


@dataclass(frozen=True)
class Request:
    method: str
    line: int
    character: int  # UTF-16 code units


@dataclass
class Samples:
    """Latencies (ms) per server in request order, and what went wrong."""

    ms: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in SERVERS})
    methods: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class LspClient:
    """A language server child process, spoken to over its stdio."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        # Its own session: a Ctrl-C reaches only us, and we shut it down in order.
        self.proc = Popen(command, stdin=PIPE, stdout=PIPE, stderr=DEVNULL, start_new_session=True)
        self.extra_pids: list[int] = []  # the server's own children, checked at close
        self._ids = itertools.count(1)
        self._pending: dict[int, Reply] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read_loop, name=f"{name}-reader", daemon=True).start()

    def _send(self, message: dict[str, Any]) -> float:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        with self._lock:
            started = time.perf_counter()
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            self.proc.stdin.flush()
        return started

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: Any, on_reply: Reply) -> float:
        """Send without waiting; ``on_reply(reply, read_at)`` runs on the reader thread."""
        msg_id = next(self._ids)
        self._pending[msg_id] = on_reply
        return self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def request(self, method: str, params: Any = None) -> tuple[dict[str, Any], float]:
        """Send and wait; return the reply and its latency in ms (write to reply read)."""
        done, box = threading.Event(), []
        started = self.send_request(method, params, lambda m, t: (box.extend((m, t)), done.set()))
        if not done.wait(TIMEOUT):
            raise TimeoutError(f"{self.name}: {method} {params} got no reply in {TIMEOUT:.0f}s")
        if box[0] is None:
            raise ConnectionError(f"{self.name} exited while {method} was pending")
        return box[0], (box[1] - started) * 1000

    def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = None
            while (line := stdout.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if not line:
                break
            if length is not None:
                body = stdout.read(length)
                self._dispatch(json.loads(body), time.perf_counter())
        for on_reply in self._pending.values():
            on_reply(None, time.perf_counter())

    def _dispatch(self, message: dict[str, Any], read_at: float) -> None:
        if "method" in message:
            if "id" in message:  # a server->client request
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        on_reply = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if on_reply is not None:
            on_reply(message, read_at)

    def open_document(self, path: Path, text: str) -> None:
        """initialize (rootUri = the file's folder), initialized, didOpen."""
        caps = {"general": {"positionEncodings": ["utf-16"]}}
        params = {"processId": os.getpid(), "rootUri": path.parent.as_uri()}
        self.request("initialize", {**params, "capabilities": caps})
        self.notify("initialized", {})
        doc = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": doc})

    def close(self) -> None:
        """shutdown + exit; then make sure neither the server nor its children live on."""
        try:
            if self.proc.poll() is None:
                self.request("shutdown")
                self.notify("exit")
                self.proc.wait(timeout=10)
        except Exception as exc:
            print(f"warning: {self.name} did not shut down cleanly: {exc!r}", file=sys.stderr)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for pid in self.extra_pids:
                reap_stray(pid, self.name)


def reap_stray(pid: int, owner: str) -> None:
    """Give ``pid`` 5 s to go away (exit or zombie), then kill it."""
    for _ in range(100):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return
        except OSError:
            return
        time.sleep(0.05)
    print(f"warning: {owner}'s child {pid} outlived it; killing it", file=sys.stderr)
    os.kill(pid, signal.SIGKILL)


class BusyKeeper:
    """Keeps one ``steerlsp/benchBusy`` running until stopped."""

    def __init__(self, client: LspClient) -> None:
        self.client, self.running, self.completed = client, False, 0
        self.errors: list[Any] = []

    def start(self) -> None:
        self.running = True
        self.client.send_request("steerlsp/benchBusy", {"seconds": BUSY_SECONDS}, self._done)

    def _done(self, reply: dict[str, Any] | None, _read_at: float) -> None:
        self.completed += 1
        if reply is None or "error" in reply:
            self.errors.append(reply and reply["error"])
        elif self.running:
            self.start()

    def stop(self) -> None:
        self.running = False


def build_requests(text: str, count: int, seed: int) -> list[Request]:
    """``count`` requests cycling over METHODS at random identifier occurrences:
    hover mid-name, definition at its start, completion at its end (or right after
    the "." before it, half of the time)."""
    lines = text.splitlines(keepends=True)
    names, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            names.append((tok, prev is not None and prev.string == "."))
        prev = tok
    rng = random.Random(seed)
    requests = []
    for i in range(count):
        method = METHODS[i % len(METHODS)]
        tok, after_dot = rng.choice(names)
        (row, start), (_, end) = tok.start, tok.end
        if method == "textDocument/hover":
            col = (start + end) // 2
        elif method == "textDocument/definition" or (after_dot and rng.random() < 0.5):
            col = start
        else:
            col = end
        utf16 = len(lines[row - 1][:col].encode("utf-16-le")) // 2
        requests.append(Request(method, row - 1, utf16))
    return requests


def send_timed(client: LspClient, uri: str, req: Request, samples: Samples) -> str:
    """Send one request and record its latency; return its result, canonicalised
    (lists sorted: pylsp lists several definitions in no fixed order)."""
    params = {
        "textDocument": {"uri": uri},
        "position": {"line": req.line, "character": req.character},
    }
    reply, ms = client.request(req.method, params)
    samples.ms[client.name].append(ms)
    if "error" in reply:
        samples.problems.append(f"{client.name} {req}: error {reply['error']}")
    result = reply.get("result")
    if isinstance(result, list):
        return json.dumps(sorted(json.dumps(item, sort_keys=True) for item in result))
    return json.dumps(result, sort_keys=True)


def measure(clients: list[LspClient], uri: str, requests: list[Request], samples: Samples) -> None:
    """The same blocks of requests to each client, alternating who goes first."""
    for index, start in enumerate(range(0, len(requests), BLOCK)):
        block = requests[start : start + BLOCK]
        results = {}
        for client in clients if index % 2 == 0 else clients[::-1]:
            results[client.name] = [send_timed(client, uri, req, samples) for req in block]
        samples.methods += [req.method for req in block]
        for req, direct, proxied in zip(block, results["direct"], results["proxied"], strict=True):
            if direct != proxied:
                samples.problems.append(f"{req}: results differ: {direct[:150]} vs {proxied[:150]}")


def run(path: Path, requests: list[Request]) -> dict[str, Samples]:
    """Start both servers, warm up, measure idle then busy; always shut them down."""
    uri, text = path.as_uri(), path.read_text(encoding="utf-8")
    results = {"idle": Samples(), "busy": Samples()}
    with contextlib.ExitStack() as stack:
        clients = []
        for name, command in SERVERS.items():
            clients.append(LspClient(name, command))
            stack.callback(clients[-1].close)
            clients[-1].open_document(path, text)
        proxied = clients[1]
        status = proxied.request("steerlsp/status")[0]["result"]
        proxied.extra_pids.append(status["upstream"]["pid"])
        measure(clients, uri, requests[:WARMUP], Samples())  # warm-up, not counted
        measure(clients, uri, requests[WARMUP:], results["idle"])
        keeper = BusyKeeper(proxied)
        stack.callback(keeper.stop)
        keeper.start()
        time.sleep(0.2)  # let the worker thread start spinning
        measure(clients, uri, requests[WARMUP:], results["busy"])
        results["busy"].problems += [f"proxied benchBusy: error {e}" for e in keeper.errors]
        print(f"benchBusy requests completed during the busy scenario: {keeper.completed}")
    return results


def summarize(samples: Samples) -> dict[str, dict[str, float]]:
    """Per method and overall: percentiles of direct, proxied, and paired differences."""
    methods = np.array(samples.methods)
    direct, proxied = np.array(samples.ms["direct"]), np.array(samples.ms["proxied"])
    rows = {}
    for label in (*METHODS, "all"):
        mask = np.ones(len(methods), bool) if label == "all" else methods == label
        row: dict[str, float] = {"n": int(mask.sum())}
        for q in (50, 99):
            d, p = np.percentile(direct[mask], q), np.percentile(proxied[mask], q)
            paired = np.percentile(proxied[mask] - direct[mask], q)
            row |= {f"direct_p{q}": d, f"proxied_p{q}": p, f"added_p{q}": p - d}
            row |= {f"ratio_p{q}": p / d, f"paired_p{q}": paired}
        rows[label.removeprefix("textDocument/")] = row
    return rows


COLUMNS = [  # (header, key, format); times in ms
    *[(f"{k} p{q}", f"{k}_p{q}", "{:.2f}") for q in (50, 99) for k in ("direct", "proxied")],
    *[(f"added p{q}", f"added_p{q}", "{:+.2f}") for q in (50, 99)],
    *[(f"ratio p{q}", f"ratio_p{q}", "{:.3f}x") for q in (50, 99)],
    *[(f"paired Δ p{q}", f"paired_p{q}", "{:+.2f}") for q in (50, 99)],
]


def markdown(summary: dict[str, dict[str, dict[str, float]]]) -> str:
    head = ["scenario", "method", "n", *(header for header, _, _ in COLUMNS)]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for scenario, rows in summary.items():
        for method, row in rows.items():
            cells = [scenario, method, str(row["n"]), *(f.format(row[k]) for _, k, f in COLUMNS)]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def verdicts(summary: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """PASS/MISS per target, scenario and method ("all" is the headline)."""
    lines = []
    for scenario, rows in summary.items():
        for method, row in rows.items():
            for q, limit in TARGETS_MS.items():
                added = row[f"added_{q}"]
                verdict = "PASS" if added <= limit else "MISS"
                lines.append(
                    f"{verdict} {scenario} {method}: added {q} {added:+.2f} ms (<= {limit})"
                )
    return lines


def plot(results: dict[str, Samples], path: Path) -> None:
    """Latency CDFs per method, direct (solid) vs proxied (dashed), a panel per scenario."""
    fig, axes = plt.subplots(1, len(results), figsize=(13, 5), sharey=True, squeeze=False)
    for ax, (scenario, samples) in zip(axes[0], results.items(), strict=True):
        methods = np.array(samples.methods)
        for color, method in zip(("C0", "C1", "C2"), METHODS, strict=True):
            for server, style in (("direct", "-"), ("proxied", "--")):
                ms = np.sort(np.array(samples.ms[server])[methods == method])
                label = f"{method.removeprefix('textDocument/')} {server}"
                ax.plot(ms, np.arange(1, len(ms) + 1) / len(ms), style, color=color, label=label)
        ax.set(xscale="log", xlabel="latency (ms)", title=f"{scenario}: direct vs proxied")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("fraction of requests")
    axes[0][0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="measured requests per scenario")
    parser.add_argument("--file", default=textwrap.__file__, help="module (default: textwrap)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    started = time.monotonic()
    source = Path(args.file).resolve()
    text = source.read_text(encoding="utf-8")
    requests = build_requests(text, WARMUP + args.requests, args.seed)
    try:
        # A copy in a fresh folder: with the stdlib folder as its project root, jedi
        # spends seconds per hover, which would bury what we measure.
        with tempfile.TemporaryDirectory(prefix="proxy_latency-") as folder:
            path = Path(folder) / source.name
            path.write_text(text, encoding="utf-8")
            results = run(path, requests)
    except KeyboardInterrupt:
        print("interrupted; servers shut down", file=sys.stderr)
        return 130
    summary = {scenario: summarize(samples) for scenario, samples in results.items()}
    problems = [p for samples in results.values() for p in samples.problems]
    args.out.mkdir(parents=True, exist_ok=True)
    plot(results, args.out / "proxy_latency.png")
    report = {"file": str(source), "requests": args.requests, "seed": args.seed}
    report |= {"targets_ms": TARGETS_MS, "summary": summary, "verdicts": verdicts(summary)}
    report |= {"problems": problems, "samples": {k: asdict(v) for k, v in results.items()}}
    (args.out / "proxy_latency.json").write_text(json.dumps(report, indent=1))
    print(markdown(summary), "", *verdicts(summary), "", f"{len(problems)} problem(s)", sep="\n")
    print(*problems[:20], sep="\n")
    print(f"wrote {args.out}/proxy_latency.json and .png in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
