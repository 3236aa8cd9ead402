"""The decode loop's speed while the editor's pylsp lints a large file, against idle.

The embedded model as the server loads it: the prefill of a 1,000-token prompt
of pandas' ``plotting/_matplotlib/converter.py`` on an empty cache and 32
greedy tokens after it (as ``bench/decode_contention.py``), while the default
pylsp (``isolation.pylsp_command``, the bootstrap steerlsp starts it with) is
sent a ``didOpen`` of sqlalchemy's mssql ``base.py`` (86,000 characters) under
a new name every 0.7 s, so that it lints all along. Conditions, taking turns
each round:

- **idle**: no pylsp;
- **own session**: pylsp in a session of its own, as steerlsp started it before
  stop 42 (Linux's autogroup then shares the CPU between the two sessions, so
  the class its lint threads are in counts only among its own threads);
- **our session**: in steerlsp's session, as it starts it now (its lint threads
  in the idle scheduling class, ``guard.lint_when_idle``).

Run: PYTHONPATH=. .venv/bin/python bench/lint_contention.py --out bench/results [--rounds 2]
Writes OUT/lint_contention.json and .md; medians of 3 completions per condition
and round, ratios against idle.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode_bench import load_ours
from bench.decode_contention import PROMPT_TOKENS, library_source, timed
from bench.lspbench import LspClient
from steerlsp.server.upstream import isolation

CONDITIONS = {"idle": None, "own session": True, "our session": False}  # -> own session
LARGE = Path("sqlalchemy") / "dialects" / "mssql" / "base.py"
REPEATS = 3


class Linting:
    """The default pylsp, initialized, opening the large file under new names."""

    def __init__(self, own_session: bool, text: str) -> None:
        self.text = text
        self.client = LspClient(
            "pylsp",
            isolation.pylsp_command(),
            own_session=own_session,
            cwd=isolation.neutral_cwd(),
            env=isolation.child_env(),
        )
        self.client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        self.client.notify("initialized", {})
        self.stop = threading.Event()
        threading.Thread(target=self._feed, daemon=True).start()
        time.sleep(1.5)  # linting by now
        self.started_cpu_ms = self.cpu_ms()

    def _feed(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            doc = {"uri": f"file:///lint/{n}.py", "languageId": "python", "version": 1}
            self.client.notify("textDocument/didOpen", {"textDocument": {**doc, "text": self.text}})
            self.stop.wait(0.7)

    def cpu_ms(self) -> int:
        pid = self.client.proc.pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 10  # clock ticks of 10 ms

    def close(self) -> int:
        """Stops it; the CPU it used since it was linting (ms)."""
        used = self.cpu_ms() - self.started_cpu_ms
        self.stop.set()
        self.client.proc.kill()  # no orderly shutdown: it may be mid-lint
        self.client.proc.wait()
        return used


def run(rounds: int) -> list[dict[str, Any]]:
    path, root, _ = library_source()
    completer = load_ours("default")
    ids = completer.tokenizer.encode(path.read_text(), add_special_tokens=False)[:PROMPT_TOKENS]
    large = (root / LARGE).read_text()
    timed(completer, ids)  # the model's first call
    samples = []
    for round_ in range(rounds):
        names = list(CONDITIONS)
        turn = round_ % len(names)
        for condition in names[turn:] + names[:turn]:
            own = CONDITIONS[condition]
            linting = Linting(own, large) if own is not None else None
            got = [timed(completer, ids) for _ in range(REPEATS)]
            used = linting.close() if linting is not None else 0
            samples += [{"round": round_, "condition": condition, **g} for g in got]
            samples[-1]["pylsp_cpu_ms"] = used
            print(round_, condition, got, f"pylsp cpu {used} ms", file=sys.stderr, flush=True)
    return samples


def summarize(samples: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    idle = {
        k: statistics.median(s[k] for s in samples if s["condition"] == "idle")
        for k in (
            "prefill_tps",
            "decode_tps",
        )
    }
    summary = {}
    for condition in CONDITIONS:
        mine = [s for s in samples if s["condition"] == condition]
        prefill = statistics.median(s["prefill_tps"] for s in mine)
        decode = statistics.median(s["decode_tps"] for s in mine)
        summary[condition] = {
            "prefill_tps": prefill,
            "prefill_ratio": prefill / idle["prefill_tps"],
            "decode_tps": decode,
            "decode_ratio": decode / idle["decode_tps"],
            "pylsp_cpu_ms": statistics.median(
                s["pylsp_cpu_ms"] for s in mine if "pylsp_cpu_ms" in s
            ),
        }
    return summary


def table(summary: dict[str, dict[str, float]], rounds: int) -> str:
    lines = [
        "# Decode speed while the editor's pylsp lints",
        "",
        f"{PROMPT_TOKENS}-token prefill and 32 greedy tokens, {REPEATS} per condition and "
        f"round, {rounds} round(s), medians; pylsp linting an 86,000-character file all along.",
        "",
        "| condition | prefill tok/s | ÷ idle | decode tok/s | ÷ idle | pylsp CPU per round |",
        "|---|---|---|---|---|---|",
    ]
    for condition, s in summary.items():
        lines.append(
            f"| {condition} | {s['prefill_tps']:.0f} | {s['prefill_ratio']:.2f} | "
            f"{s['decode_tps']:.1f} | {s['decode_ratio']:.2f} | {s['pylsp_cpu_ms']:.0f} ms |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    samples = run(args.rounds)
    summary = summarize(samples)
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"samples": samples, "summary": summary, "rounds": args.rounds}
    (args.out / "lint_contention.json").write_text(json.dumps(report, indent=1))
    markdown = table(summary, args.rounds)
    (args.out / "lint_contention.md").write_text(markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
