"""Keystroke latency against document size: does a big file stall steerlsp?

For each size (1 KB to 20 MB of generated Python, one line holding an astral
emoji so that UTF-16 -> code-point conversion is exercised), a fresh
``steerlsp --no-model`` with real pylsp upstream opens the document; then the
client types characters one at a time at the end of the emoji line, each an
incremental ``didChange`` (UTF-16 columns), and right after it sends:

- ``steerlsp/status``, answered by steerlsp itself: the time from writing the
  didChange to reading this reply is the **stall of steerlsp's event loop**
  for one keystroke (the headline figure);
- ``bench/ping``, a method no one serves, forwarded to pylsp, which answers
  MethodNotFound once it has applied the change: **end to end**, pylsp's own
  per-keystroke cost included (pylsp re-splits the whole text on every change);
- ``textDocument/inlineCompletion`` at the cursor (automatic trigger, as
  editors send one per keystroke): with ``--no-model`` it is refused, but only
  after the handler has read the document, so this series is the cost of
  getting a prompt's text out of a large document.

The same typing against pylsp directly (``bench/ping`` only) gives pylsp's own
figure. pylsp's linters are turned off (``workspace/didChangeConfiguration``
before ``didOpen``) so that a 20 MB pyflakes run does not take the CPU from
what is measured. The first ``--warmup`` keystrokes are not counted.

Writes OUT/keystroke_latency.json (every sample, median and p90 per size and
series) and OUT/keystroke_latency.png; prints a Markdown table. Default run:
about 1-2 minutes on 2 cores.

Run: .venv/bin/python bench/keystroke_latency.py [--keystrokes 30] [--sizes 1e3,1e5,1e6,5e6,2e7]
     [--no-direct] [--out bench/results]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, bench/ is a package
from bench.lspbench import TIMEOUT, LspClient

STEERLSP = [sys.executable, "-m", "steerlsp", "--no-model"]
PYLSP = [sys.executable, "-m", "pylsp"]
SIZES = (1_000, 100_000, 1_000_000, 5_000_000, 20_000_000)
STATUS, PING, INLINE = "steerlsp/status", "bench/ping", "textDocument/inlineCompletion"
EMOJI_LINE = 'MARK = "😋"  # typing happens at the end of this line'
PYLSP_QUIET = {
    "pylsp": {
        "plugins": {
            name: {"enabled": False}
            for name in ("pyflakes", "pycodestyle", "mccabe", "pydocstyle", "pylint", "flake8")
        }
    }
}


def document(size: int) -> tuple[str, int]:
    """About ``size`` characters of Python, and the line (mid-document) holding the emoji."""
    block = (
        "def function_{i}(alpha, beta):\n"
        '    """Return a weighted sum."""\n'
        "    total = alpha + beta * {i}\n"
        "    return total\n\n\n"
    )
    blocks, length, i = [], 0, 0
    while length < size:
        blocks.append(block.format(i=i))
        length += len(blocks[-1])
        i += 1
    middle = len(blocks) // 2
    line = sum(b.count("\n") for b in blocks[:middle])
    blocks.insert(middle, EMOJI_LINE + "\n")
    return "".join(blocks), line


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Typist:
    """Types at the end of one line and times the replies that follow each keystroke."""

    def __init__(self, client: LspClient, uri: str, line: int, probes: tuple[str, ...]) -> None:
        self.client, self.uri, self.line, self.probes = client, uri, line, probes
        self.column, self.version = utf16(EMOJI_LINE), 1

    def params(self, probe: str, position: dict[str, int]) -> dict[str, Any]:
        if probe != INLINE:
            return {}
        after = {"line": position["line"], "character": position["character"] + 1}
        return {
            "textDocument": {"uri": self.uri},
            "position": after,
            "context": {"triggerKind": 2},
        }

    def keystroke(self) -> dict[str, float]:
        """One didChange, then each probe request; ms from the didChange to each reply."""
        self.version += 1
        position = {"line": self.line, "character": self.column}
        self.column += 1
        done = threading.Event()
        replies: dict[str, float] = {}

        def on_reply(probe: str) -> Any:
            def record(message: dict[str, Any] | None, read_at: float) -> None:
                if message is None:
                    raise ConnectionError(f"{self.client.name} exited")
                replies[probe] = read_at
                if len(replies) == len(self.probes):
                    done.set()

            return record

        change = {"range": {"start": position, "end": position}, "text": "x"}
        self.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [change],
            },
        )
        started = time.perf_counter()
        for probe in self.probes:
            self.client.send_request(probe, self.params(probe, position), on_reply(probe))
        if not done.wait(TIMEOUT):
            raise TimeoutError(f"{self.client.name}: no reply to a keystroke in {TIMEOUT:.0f}s")
        return {probe: (read_at - started) * 1000 for probe, read_at in replies.items()}


def session(
    name: str,
    command: list[str],
    path: Path,
    text: str,
    line: int,
    probes: tuple[str, ...],
    n: int,
    warmup: int,
) -> dict[str, list[float]]:
    """Start a server, quiet pylsp, open the document, type ``warmup + n`` keys."""
    client = LspClient(name, command)
    with contextlib.ExitStack() as stack:
        stack.callback(client.close)
        caps = {"general": {"positionEncodings": ["utf-16"]}}
        client.request(
            "initialize", {"processId": None, "rootUri": path.parent.as_uri(), "capabilities": caps}
        )
        client.notify("initialized", {})
        client.notify("workspace/didChangeConfiguration", {"settings": PYLSP_QUIET})
        doc = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
        client.notify("textDocument/didOpen", {"textDocument": doc})
        client.request(PING)  # the upstream has the document: typing starts from a quiet server
        if STATUS in probes:
            status = client.request(STATUS)[0]["result"]
            client.extra_pids.append(status["upstream"]["pid"])
        typist = Typist(client, path.as_uri(), line, probes)
        samples: dict[str, list[float]] = {probe: [] for probe in probes}
        for i in range(warmup + n):
            timings = typist.keystroke()
            if i >= warmup:
                for probe, ms in timings.items():
                    samples[probe].append(ms)
    return samples


def stats(ms: list[float]) -> dict[str, float]:
    return {"median": float(np.median(ms)), "p90": float(np.percentile(ms, 90)), "n": len(ms)}


SERIES = {
    ("steerlsp", STATUS): "steerlsp event loop (steerlsp/status)",
    ("steerlsp", PING): "through steerlsp to pylsp (bench/ping)",
    ("steerlsp", INLINE): "steerlsp inlineCompletion, no model (reads the document)",
    ("pylsp", PING): "pylsp direct (bench/ping)",
}


def run(sizes: list[int], n: int, warmup: int, direct: bool) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": sizes, "keystrokes": n, "series": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            text, line = document(size)
            path = Path(tmp) / f"doc_{size}.py"
            path.write_text(text, encoding="utf-8")  # pylsp may look at the disk too
            started = time.monotonic()
            measured = {
                "steerlsp": session(
                    "steerlsp", STEERLSP, path, text, line, (STATUS, PING, INLINE), n, warmup
                )
            }
            if direct:
                measured["pylsp"] = session("pylsp", PYLSP, path, text, line, (PING,), n, warmup)
            for server, samples in measured.items():
                for probe, ms in samples.items():
                    series = results["series"].setdefault(SERIES[(server, probe)], {})
                    series[str(size)] = {**stats(ms), "ms": ms}
            print(f"{size:>10,} chars: {time.monotonic() - started:.1f} s", file=sys.stderr)
    return results


def table(results: dict[str, Any]) -> str:
    names = list(results["series"])
    head = "| size | " + " | ".join(f"{name}: median / p90 ms" for name in names) + " |"
    rows = [head, "|---" * (len(names) + 1) + "|"]
    for size in results["sizes"]:
        cells = []
        for name in names:
            s = results["series"][name].get(str(size))
            cells.append(f"{s['median']:.1f} / {s['p90']:.1f}" if s else "-")
        rows.append(f"| {human(size)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def human(size: int) -> str:
    return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size / 1e3:g} KB"


def plot(results: dict[str, Any], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, series in results["series"].items():
        sizes = [s for s in results["sizes"] if str(s) in series]
        medians = [series[str(s)]["median"] for s in sizes]
        p90s = [series[str(s)]["p90"] for s in sizes]
        (line,) = ax.plot(sizes, medians, marker="o", label=f"{name}, median")
        ax.plot(sizes, p90s, linestyle="--", color=line.get_color(), alpha=0.6, label="p90")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("document size (characters)")
    ax.set_ylabel("ms from didChange to reply")
    ax.set_title(f"Keystroke latency, {results['keystrokes']} keystrokes per size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--keystrokes", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-direct", action="store_true", help="skip the direct pylsp series")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    results = run(sizes, args.keystrokes, args.warmup, not args.no_direct)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "keystroke_latency.json").write_text(json.dumps(results, indent=1))
    plot(results, args.out / "keystroke_latency.png")
    print(table(results))
    print(f"wrote {args.out / 'keystroke_latency.json'} and {args.out / 'keystroke_latency.png'}")


if __name__ == "__main__":
    main()
