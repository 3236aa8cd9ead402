"""Run the evaluation tasks through the real steerlsp, like an editor, and grade them.

For each named configuration (``bench/configs.toml``: model, sampling,
steering features) one steerlsp process is started; for each task it is told
the task's venv (``steerlsp.python.environment``), opens ``prompt.py``, asks
for an inline completion at the end, inserts it, and asks again (up to
``--rounds`` times, until an empty answer or the function's block has ended).
The completed module is graded by the task's tests in its venv (recording the
deprecated APIs it ran), and pylint's API-existence errors on the completion
lines are counted. After every completion ``steerlsp/explain`` says what steered
it (queries, timeouts, interrupts, tokens changed).

    python bench/run_tasks.py --configs baseline,sampled --out bench/results
    python bench/run_tasks.py --subset ci                  # a few tasks, for CI

Writes ``tasks_report.md``, ``tasks_report.png``, ``tasks_latency.png`` and
``tasks_results.json``; per configuration: latency percentiles and their ratio
to ``baseline``, steering counts per completion, and the deprecated-API rate.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import lspbench
from bench.lspbench import LspClient
from tests.helpers.evaltasks import (
    Task,
    grade,
    load_tasks,
    static_deprecations,
    static_errors,
    venv_for,
)
from tests.helpers.task_results import (
    BASELINE,
    KINDS,
    Result,
    add_counts,
    json_safe,
    load_configs,
    plot,
    plot_summary,
    report,
    steering_counts,
    summary,
)

lspbench.TIMEOUT = 600.0  # a multi-line completion on a loaded 2-core machine can be slow

CI_SUBSET = 3  # one task of each kind
CAPS = {"general": {"positionEncodings": ["utf-16"]}, "textDocument": {"inlineCompletion": {}}}
EXPLAIN = "steerlsp/explain"


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

    def complete(
        self, task: Task, python: Path, rounds: int
    ) -> tuple[str, list[float], dict[str, float]]:
        """Insert completions at the end of prompt.py until done: the added text, each
        request's latency, and the steering totals ``steerlsp/explain`` reported."""
        env = {**self.settings, "python": {"environment": str(python.parent.parent)}}
        self.client.notify("workspace/didChangeConfiguration", {"settings": {"steerlsp": env}})
        uri = (task.path / "prompt.py").as_uri()
        text, version, latencies = task.prompt, 1, []
        steering: dict[str, float] = {}
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
                steering = add_counts(steering, self._explain(uri, version))
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
        return text[len(task.prompt) :].rstrip() + "\n", latencies, steering

    def _explain(self, uri: str, version: int) -> dict[str, float] | None:
        """The steering counts of the completion just made; None when the server has no
        ``steerlsp/explain`` (an error reply) or describes another version's completion."""
        reply, _ = self.client.request(EXPLAIN, {"textDocument": {"uri": uri}})
        return steering_counts(reply.get("result"), version)

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
    """Every task under every configuration, the configurations in turn on each task
    (one steerlsp process each, all started first): a slow spell of the machine then
    falls on every configuration alike, so their latencies compare."""
    results = []
    editors: dict[str, Editor] = {}
    try:
        for name, config in configs.items():
            editors[name] = Editor(name, config, tasks[0].path.parent)
        for task in tasks:
            python = venv_for(task.requirements)
            for name, editor in editors.items():
                results.append(run_one(name, editor, task, python, rounds, static))
    finally:
        for editor in editors.values():
            editor.close()
    return results


def run_one(
    name: str, editor: Editor, task: Task, python: Path, rounds: int, static: bool
) -> Result:
    """One task under one configuration: complete, grade, lint."""
    completion, latencies, steering = editor.complete(task, python, rounds)
    graded = grade(task, completion, python)
    errors = static_errors(task, completion, python) if static else []
    named = static_deprecations(task, completion, python) if static else []
    lint = f"static errors: {len(errors)}" if errors else ""
    old = "deprecated API" if graded.deprecated or named else ""
    seconds = sum(latencies) / 1000
    print(f"{name:>10} {task.id:<44} {graded.outcome:<10} {seconds:5.1f}s {lint} {old}")
    return Result(
        task.id,
        task.kind,
        name,
        graded.outcome,
        graded.detail,
        completion,
        errors,
        latencies,
        graded.tests,
        graded.deprecated,
        steering,
        named,
    )


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
    parser.add_argument(
        "--base", default=BASELINE, help="the configuration latency ratios are relative to"
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    tasks = select(load_tasks(), args.subset, args.tasks)
    if not tasks:
        raise SystemExit("no task selected")
    results = run(load_configs(names), tasks, args.rounds, not args.no_static)
    args.out.mkdir(parents=True, exist_ok=True)
    markdown = report(results, names, args.base)
    (args.out / "tasks_report.md").write_text(markdown)
    document = {
        "configs": names,
        "summary": summary(results, names, args.base),
        "results": [asdict(r) for r in results],
    }
    (args.out / "tasks_results.json").write_text(
        json.dumps(json_safe(document), indent=1, allow_nan=False)
    )
    plot(results, names, args.out / "tasks_report.png")
    plot_summary(results, names, args.out / "tasks_latency.png", args.base)
    print("\n" + markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
