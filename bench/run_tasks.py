"""Run the evaluation tasks through the real steerlsp, like an editor, and grade them.

For each named configuration (``bench/configs.toml``: model, sampling,
steering features) one steerlsp process is started; for each task it is told
the task's venv (``steerlsp.python.environment``), opens ``prompt.py``, asks
for an inline completion at the end, inserts it, and asks again (up to
``--rounds`` times, until an empty answer or the function's block has ended).
The completed module is graded by the task's tests in its venv, and pylint's
API-existence errors on the completion lines are counted.

    python bench/run_tasks.py --configs baseline,sampled --out bench/results
    python bench/run_tasks.py --subset ci                  # a few tasks, for CI

Writes ``tasks_report.md``, ``tasks_report.png`` and ``tasks_results.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import lspbench
from bench.evaltasks import OUTCOMES, Task, grade, load_tasks, static_errors, venv_for
from bench.lspbench import LspClient

lspbench.TIMEOUT = 600.0  # a multi-line completion on a loaded 2-core machine can be slow

CONFIGS = Path(__file__).resolve().parent / "configs.toml"
KINDS = ("changed-api", "uncommon-api", "repo-local")
CI_SUBSET = 3  # one task of each kind
CAPS = {"general": {"positionEncodings": ["utf-16"]}, "textDocument": {"inlineCompletion": {}}}


@dataclass
class Result:
    task: str
    kind: str
    config: str
    outcome: str
    detail: str = ""
    completion: str = ""
    static_errors: list[str] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    tests: dict[str, bool] = field(default_factory=dict)


def load_configs(names: list[str]) -> dict[str, dict[str, Any]]:
    """Named configurations: ``steerlsp`` settings and extra CLI flags."""
    table = tomllib.loads(CONFIGS.read_text())
    missing = [n for n in names if n not in table]
    if missing:
        raise SystemExit(f"unknown configuration(s) {missing}; known: {sorted(table)}")
    return {name: table[name] for name in names}


class Editor:
    """One steerlsp process, used like an editor would."""

    def __init__(self, name: str, config: dict[str, Any], root: Path) -> None:
        command = [sys.executable, "-m", "steerlsp", *config.get("flags", [])]
        self.client = LspClient(name, command)
        self.settings = config.get("steerlsp", {})
        self.client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": CAPS,
                "initializationOptions": {"steerlsp": self.settings},
            },
        )
        self.client.notify("initialized", {})
        self._wait_ready()

    def _wait_ready(self, timeout: float = 900) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, _ = self.client.request("steerlsp/status", {})
            model = status["result"]["model"]
            if model["state"] == "ready":
                return
            if model["state"] in ("failed", "disabled"):
                raise SystemExit(f"model {model['state']}: {model['error']}")
            time.sleep(0.5)
        raise SystemExit("model not ready in time")

    def complete(self, task: Task, python: Path, rounds: int) -> tuple[str, list[float]]:
        """Insert completions at the end of prompt.py until done; the added text."""
        env = {**self.settings, "python": {"environment": str(python.parent.parent)}}
        self.client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": env}})
        uri = (task.path / "prompt.py").as_uri()
        text, version, latencies = task.prompt, 1, []
        self.client.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )
        try:
            for _ in range(rounds):
                lines = text.split("\n")
                reply, ms = self.client.request(
                    "textDocument/inlineCompletion",
                    {
                        "textDocument": {"uri": uri},
                        "position": {"line": len(lines) - 1, "character": _utf16(lines[-1])},
                        "context": {"triggerKind": 1},
                    },
                )
                latencies.append(ms)
                items = (reply.get("result") or {}).get("items") or []
                added = items[0]["insertText"] if items else ""
                if not added.strip():
                    break
                text += added
                if _complete(text):
                    break  # a user keeps accepting only while the code is unfinished
                text += "\n" + _indent_after(text)
                version += 1
                self.client.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": text}],
                    },
                )
        finally:
            self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        return text[len(task.prompt) :].rstrip() + "\n", latencies

    def close(self) -> None:
        self.client.close()


def _complete(text: str) -> bool:
    """True once ``text`` parses: nothing is left open."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _utf16(line: str) -> int:
    return len(line.encode("utf-16-le")) // 2


def _indent_after(text: str) -> str:
    """The indentation for the next line: deeper after a ':' line, else the same."""
    last = text.rstrip("\n").split("\n")[-1]
    indent = last[: len(last) - len(last.lstrip())]
    return indent + "    " if last.rstrip().endswith(":") else indent


def run(
    configs: dict[str, dict[str, Any]], tasks: list[Task], rounds: int, static: bool
) -> list[Result]:
    """Every task under every configuration."""
    results = []
    for name, config in configs.items():
        editor = Editor(name, config, tasks[0].path.parent)
        try:
            for task in tasks:
                python = venv_for(task.requirements)
                completion, latencies = editor.complete(task, python, rounds)
                graded = grade(task, completion, python)
                errors = static_errors(task, completion, python) if static else []
                results.append(
                    Result(
                        task.id,
                        task.kind,
                        name,
                        graded.outcome,
                        graded.detail,
                        completion,
                        errors,
                        latencies,
                        graded.tests,
                    )
                )
                lint = f"static errors: {len(errors)}" if errors else ""
                seconds = sum(latencies) / 1000
                print(f"{name:>10} {task.id:<44} {graded.outcome:<10} {seconds:5.1f}s {lint}")
        finally:
            editor.close()
    return results


def rates(results: list[Result]) -> dict[tuple[str, str], dict[str, float]]:
    """(config, kind or 'all') -> share of each outcome, in percent."""
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for r in results:
        groups[(r.config, r.kind)].append(r)
        groups[(r.config, "all")].append(r)
    out = {}
    for key, group in groups.items():
        counts = Counter(r.outcome for r in group)
        out[key] = {o: 100 * counts[o] / len(group) for o in OUTCOMES}
        out[key]["static_valid"] = (
            100 * sum(not r.static_errors and r.outcome != "error" for r in group) / len(group)
        )
        out[key]["n"] = len(group)
    return out


def report(results: list[Result], names: list[str]) -> str:
    """Markdown: per kind and configuration, the difference, and per-task changes."""
    table = rates(results)
    lines = [
        "| configuration | kind | n | solved | partial | not solved | error | static-valid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        for kind in (*KINDS, "all"):
            row = table.get((name, kind))
            if row:
                lines.append(
                    f"| {name} | {kind} | {row['n']:.0f} | {row['solved']:.0f}% | "
                    f"{row['partial']:.0f}% | {row['not_solved']:.0f}% | "
                    f"{row['error']:.0f}% | {row['static_valid']:.0f}% |"
                )
    if len(names) == 2:
        a, b = names
        lines += [
            "",
            f"Difference, {b} minus {a} (percentage points):",
            "",
            "| kind | solved | partial | not solved | error |",
            "|---|---|---|---|---|",
        ]
        for kind in (*KINDS, "all"):
            if (a, kind) in table and (b, kind) in table:
                d = {o: table[(b, kind)][o] - table[(a, kind)][o] for o in OUTCOMES}
                lines.append(
                    f"| {kind} | {d['solved']:+.0f} | {d['partial']:+.0f} | "
                    f"{d['not_solved']:+.0f} | {d['error']:+.0f} |"
                )
        by_task = defaultdict(dict)
        for r in results:
            by_task[r.task][r.config] = r.outcome
        changed = [
            f"- {t}: {o[a]} → {o[b]}"
            for t, o in sorted(by_task.items())
            if a in o and b in o and o[a] != o[b]
        ]
        lines += ["", "Tasks that changed:", "", *(changed or ["- none"])]
    latencies = sorted(ms for r in results for ms in r.latency_ms)
    if latencies:
        lines += [
            "",
            f"Median request latency {latencies[len(latencies) // 2]:.0f} ms over "
            f"{len(latencies)} requests.",
        ]
    return "\n".join(lines) + "\n"


def plot(results: list[Result], names: list[str], path: Path) -> None:
    """Stacked bars of the four grades per configuration and kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = rates(results)
    labels = [f"{n}\n{k}" for n in names for k in (*KINDS, "all") if (n, k) in table]
    keys = [(n, k) for n in names for k in (*KINDS, "all") if (n, k) in table]
    colors = {
        "solved": "#2e7d32",
        "partial": "#f9a825",
        "not_solved": "#c62828",
        "error": "#616161",
    }
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(keys)), 4))
    bottom = [0.0] * len(keys)
    for outcome in OUTCOMES:
        values = [table[key][outcome] for key in keys]
        ax.bar(
            labels, values, bottom=bottom, label=outcome.replace("_", " "), color=colors[outcome]
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("% of tasks")
    ax.set_title("steerlsp evaluation tasks")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def select(tasks: list[Task], subset: str | None, pattern: str | None) -> list[Task]:
    if pattern:
        tasks = [t for t in tasks if pattern in t.id]
    if subset == "ci":
        per_kind = CI_SUBSET // len(KINDS)
        tasks = [t for kind in KINDS for t in [t for t in tasks if t.kind == kind][:per_kind]]
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="baseline", help="comma-separated names")
    parser.add_argument("--subset", choices=["ci"], help="a few tasks of each kind")
    parser.add_argument("--tasks", help="only tasks whose id contains this")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-static", action="store_true", help="skip pylint")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    tasks = select(load_tasks(), args.subset, args.tasks)
    if not tasks:
        raise SystemExit("no task selected")
    results = run(load_configs(names), tasks, args.rounds, not args.no_static)
    args.out.mkdir(parents=True, exist_ok=True)
    markdown = report(results, names)
    (args.out / "tasks_report.md").write_text(markdown)
    (args.out / "tasks_results.json").write_text(
        json.dumps({"configs": names, "results": [asdict(r) for r in results]}, indent=1)
    )
    plot(results, names, args.out / "tasks_report.png")
    print("\n" + markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
