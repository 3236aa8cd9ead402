"""The decode loop's speed while the analysis instance works, against idle, in one run.

On a small machine the private pylsp (Jedi) and the decode loop share the cores.
This measures what that costs the model, with the conditions taking turns in
every round:

- **idle**: nothing else runs;
- **busy**: the private analysis instance, started as the server starts it,
  answers completion questions back to back on real library code (a new
  document version each, so no answer comes from a cache), as it does while a
  steered completion runs. The server starts it in the background: in
  steerlsp's session and Linux's idle scheduling class, so that it runs only on
  a core the decode loop does not want (``isolation.yield_cpu``);
- **busy (nice 0)**, **busy (nice 19)**: the same instance with its processes'
  threads at that nice instead;
- **busy (own session)**: an instance started as before issue 23's item 4: a
  session of its own at nice 0. Linux's autogroup shares the CPU between
  sessions first, so no priority within the session would reach it;
- **idle / busy (1 thread)**: torch's intra-op threads cut to one (which changes
  the logits: bf16 sums split differently, so it can change the completion, and
  cannot be switched with the load).

Each condition runs under each OpenMP wait policy (``--wait-policies``), in a
process of its own, the policies taking turns each round: **spin**, libgomp's
default (idle threads spin a while before they sleep), **passive** (they sleep
at once) and **short spin**, what the server sets before torch loads
(``server/cli.py``): a thirtieth of the default's spin. A spinning team on
every core collapses when another process wants one of them.

Per condition: the prefill of a 1000-token prompt of library code on an empty
cache (tokens/s), 32 greedy decode tokens after it (tokens/s over tokens
2..32), and, while busy, the analysis questions answered and their median
latency. The embedded model is loaded as the server loads it on a CPU (int8
head, bf16 linear layers where the CPU has them).

Ratios are per round, against the first condition of the round (spin: idle),
medians over rounds. Issue 23's target: decode tok/s while the analysis works
÷ idle ≥ 0.9.

Run: PYTHONPATH=. .venv/bin/python bench/decode_contention.py --out bench/results [--rounds 3]
Writes OUT/decode_contention.json, .md and .png.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.analysis_host import AnalysisHost
from bench.analysis_latency import positions
from bench.decode_bench import load_ours, timed_decode
from bench.next_identifier import THIRD_PARTY, gather
from steerlsp.models.steering.analysis import AnalysisError
from steerlsp.server.cli import SPIN_COUNT

PROMPT_TOKENS = 1000
DECODE_TOKENS = 32
# name -> (the instance's priority: None as started, else a nice; torch threads, None: all)
CONDITIONS: dict[str, tuple[int | None, int | None]] = {
    "idle": (None, None),
    "idle (1 thread)": (None, 1),
    "busy": (None, None),
    "busy (nice 0)": (0, None),
    "busy (nice 19)": (19, None),
    "busy (own session)": (None, None),
    "busy (1 thread)": (None, 1),
}
FOREGROUND = "busy (own session)"


class Questions:
    """The analysis instance asking back to back on a thread, while ``busy`` is set."""

    def __init__(self, host: AnalysisHost, path: Path, asked: list[tuple[str, int]]) -> None:
        self.host, self.path, self.asked = host, path, asked
        self.busy = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.stopped = False
        self.latencies: list[float] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for count, (text, offset) in enumerate(itertools.cycle(self.asked)):
            self.busy.wait()
            if self.stopped:
                return
            self.idle.clear()
            head = f"# question {count}\n"  # answers are cached per text up to the offset
            started = time.perf_counter()
            with contextlib.suppress(AnalysisError):
                self.host.document(self.path).completions_at(
                    head + text, len(head) + offset, timeout=30
                )
                self.latencies.append((time.perf_counter() - started) * 1000)
            self.idle.set()

    def start(self) -> None:
        self.latencies = []
        self.busy.set()
        time.sleep(0.3)  # the first question is under way

    def pause(self) -> list[float]:
        self.busy.clear()
        self.idle.wait()
        return self.latencies

    def stop(self) -> None:
        self.stopped = True
        self.busy.set()


def library_source() -> tuple[Path, Path, str | None]:
    """A large third-party module of the benchmark venv, its site-packages and python."""
    _, library, _ = gather("test", None, THIRD_PARTY, 0)
    root, python = library[0].root, library[0].python
    path = Path(root) / "pandas" / "plotting" / "_matplotlib" / "converter.py"
    return path, Path(root), python


def timed(completer: Any, ids: list[int]) -> dict[str, float]:
    """Prefill ``ids`` on an empty cache, then greedy tokens with EOS masked: tokens/s."""
    got = timed_decode(completer.engine, ids, DECODE_TOKENS, None)
    return {"prefill_tps": got["prefill_tps"], "decode_tps": got["decode_tps"]}


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Jedi's environment subprocess among them)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    tree = [pid]
    for parent in tree:
        tree += [child for child, of in parents.items() if of == parent]
    return tree


def set_priority(pid: int, priority: int | None) -> None:
    """Every thread of ``pid`` and its descendants at a nice, or (None) back in the
    idle scheduling class it was started in (Linux's are per thread)."""
    tasks = [t for p in process_tree(pid) for t in Path(f"/proc/{p}/task").iterdir()]
    for task in tasks:
        tid = int(task.name)
        with contextlib.suppress(ProcessLookupError):
            if priority is None:
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            else:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, tid, priority)


def run(rounds: int, names: list[str]) -> dict[str, Any]:
    path, root, python = library_source()
    text = path.read_text(encoding="utf-8")
    completer = load_ours("default")
    ids = completer.tokenizer.encode(text, add_special_tokens=False)[:PROMPT_TOKENS]
    threads = torch.get_num_threads()
    asked = positions(text)[:200]
    hosts = {False: AnalysisHost(root, python)}  # keyed by "own session"
    if FOREGROUND in names:
        hosts[True] = AnalysisHost(root, python, background=False)
    questions = {}
    for foreground, host in hosts.items():
        host.warm(path)
        questions[foreground] = Questions(host, path, asked)
    pid = hosts[False].instance.status()["pid"]
    timed(completer, ids)  # the model's first call
    samples: list[dict[str, Any]] = []
    try:
        for round_ in range(rounds):
            turn = round_ % len(names)
            for condition in names[turn:] + names[:turn]:
                priority, cut = CONDITIONS[condition]
                set_priority(pid, priority)
                torch.set_num_threads(cut or threads)
                asking = questions[condition == FOREGROUND]
                busy = condition.startswith("busy")
                if busy:
                    asking.start()
                got = timed(completer, ids)
                latencies = asking.pause() if busy else []
                torch.set_num_threads(threads)
                samples.append(
                    {"round": round_, "condition": condition, **got, "questions_ms": latencies}
                )
                print(round_, condition, {k: round(v, 1) for k, v in got.items()}, flush=True)
    finally:
        for asking in questions.values():
            asking.stop()
        set_priority(pid, None)
        for host in hosts.values():
            host.close()
    return {
        "samples": samples,
        "threads": threads,
        "prompt_tokens": len(ids),
        "source": str(path.relative_to(root)),
    }


def summarize(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Medians per condition; ratios against the first condition of the same round."""
    samples = report["samples"]
    reference = samples[0]["condition"] if samples else "idle"
    idle = {s["round"]: s for s in samples if s["condition"] == reference}
    summary: dict[str, dict[str, float]] = {}
    for condition in dict.fromkeys(s["condition"] for s in samples):
        mine = [s for s in samples if s["condition"] == condition]
        questions = [q for s in mine for q in s["questions_ms"]]
        summary[condition] = {
            "prefill_tps": statistics.median(s["prefill_tps"] for s in mine),
            "decode_tps": statistics.median(s["decode_tps"] for s in mine),
            "prefill_ratio": statistics.median(
                s["prefill_tps"] / idle[s["round"]]["prefill_tps"] for s in mine
            ),
            "decode_ratio": statistics.median(
                s["decode_tps"] / idle[s["round"]]["decode_tps"] for s in mine
            ),
            "questions": len(questions),
            "question_p50_ms": statistics.median(questions) if questions else 0.0,
        }
    return summary


def table(summary: dict[str, dict[str, float]], report: dict[str, Any], rounds: int) -> str:
    lines = [
        "# Decode speed while the analysis works",
        "",
        f"The embedded model, {report['prompt_tokens']}-token prompt of "
        f"`{report['source']}`, {DECODE_TOKENS} decode tokens, torch threads "
        f"{report['threads']}, the analysis instance started as the server starts it; "
        f"medians over {rounds} rounds, the conditions taking turns.",
        "",
        "| condition | prefill tok/s | ÷ idle | decode tok/s | ÷ idle | questions "
        "| question p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for condition, s in summary.items():
        lines.append(
            f"| {condition} | {s['prefill_tps']:.0f} | {s['prefill_ratio']:.2f} | "
            f"{s['decode_tps']:.1f} | {s['decode_ratio']:.2f} | {s['questions']:.0f} | "
            f"{s['question_p50_ms']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, dict[str, float]], path: Path) -> None:
    names = list(summary)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.38
    xs = range(len(names))
    prefill = [summary[n]["prefill_ratio"] for n in names]
    decode = [summary[n]["decode_ratio"] for n in names]
    ax.bar([x - width / 2 for x in xs], prefill, width, label="prefill")
    ax.bar([x + width / 2 for x in xs], decode, width, label="decode")
    ax.axhline(0.9, color="grey", linestyle="--", linewidth=1, label="target 0.9")
    ax.set_xticks(list(xs), names, rotation=30, ha="right")
    ax.set_ylabel(f"tok/s ÷ {names[0]} (median)")
    ax.set_title("The decode loop while the analysis instance works (2 cores)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# OpenMP's wait policy, set before torch loads (``steerlsp/cli.py``): name -> environment.
POLICIES: dict[str, dict[str, str]] = {
    "spin": {},  # libgomp's default: idle threads spin a while before they sleep
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},  # they sleep at once
    "short spin": {"GOMP_SPINCOUNT": SPIN_COUNT},  # the server's: a thirtieth of the spin
}


def across_policies(policies: list[str], rounds: int, names: list[str]) -> dict[str, Any]:
    """Each round, one child process per wait policy (taking turns), each measuring
    ``names`` once; the samples tagged ``policy: condition``."""
    samples: list[dict[str, Any]] = []
    report: dict[str, Any] = {}
    for round_ in range(rounds):
        turn = round_ % len(policies)
        for policy in policies[turn:] + policies[:turn]:
            with tempfile.TemporaryDirectory() as out:
                environment = {
                    k: v
                    for k, v in os.environ.items()
                    if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
                }
                command = [sys.executable, __file__, "--rounds", "1", "--out", out]
                command += ["--wait-policies", ""]  # this process's own
                command += ["--conditions", ",".join(names)]
                subprocess.run(command, env=environment | POLICIES[policy], check=True)
                report = json.loads((Path(out) / "decode_contention.json").read_text())
            for sample in report["samples"]:
                tagged = f"{policy}: {sample['condition']}"
                samples.append(sample | {"round": round_, "condition": tagged})
    samples.sort(key=lambda s: (s["round"], s["condition"] != f"{policies[0]}: idle"))
    return {k: v for k, v in report.items() if k != "summary"} | {"samples": samples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help="idle first")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument(
        "--wait-policies",
        default=",".join(POLICIES),
        help=f"OpenMP wait policies to compare, each in its own process: {', '.join(POLICIES)}",
    )
    args = parser.parse_args(argv)
    chosen = [c.strip() for c in args.conditions.split(",")]
    if chosen[0] != "idle" or not set(chosen) <= set(CONDITIONS):
        raise SystemExit(f"--conditions: idle, then any of {', '.join(CONDITIONS)}")
    policies = [p.strip() for p in args.wait_policies.split(",") if p.strip()]
    if not set(policies) <= set(POLICIES):
        raise SystemExit(f"--wait-policies: any of {', '.join(POLICIES)}")
    if policies:
        report = across_policies(policies, args.rounds, chosen)
    else:
        report = run(args.rounds, chosen)
    summary = summarize(report)
    markdown = table(summary, report, args.rounds)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "decode_contention.json").write_text(
        json.dumps({"summary": summary, **report}, indent=1)
    )
    (args.out / "decode_contention.md").write_text(markdown)
    plot(summary, args.out / "decode_contention.png")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
